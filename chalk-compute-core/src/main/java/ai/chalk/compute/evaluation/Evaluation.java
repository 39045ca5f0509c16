package ai.chalk.compute.evaluation;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * An evaluation: a dataset revision pinned to a task function version and scorers. It does not change once created;
 * each {@link #run(Map)} puts the same rows through the same versions.
 * <pre>{@code
 * Evaluation capitals = Evaluation.create("Capitals", "capitals", answer, List.of(Scorers.exactMatch()), null, Map.of());
 * EvaluationRun run = capitals.run(Map.of("git_sha", "abc123")).await(Duration.ofMinutes(10));
 * }</pre>
 * The values are what the server described when asked; the run methods call through the client that made it.
 */
public final class Evaluation {

    private final EvaluationClient client;
    private final ai.chalk.compute.proto.evaluation.v1.Evaluation proto;

    Evaluation(EvaluationClient client, ai.chalk.compute.proto.evaluation.v1.Evaluation proto) {
        this.client = Objects.requireNonNull(client, "client");
        this.proto = Objects.requireNonNull(proto, "proto");
    }

    /**
     * Creates an evaluation on the server this process's environment names, through a client shared by the process;
     * see {@link EvaluationClient#create(String, Object, Object, List, String, Map)} for what each argument may be.
     *
     * @param name     the evaluation's name
     * @param dataset  the dataset's name, a {@link ai.chalk.compute.dataset.Dataset} or a
     *                 {@link ai.chalk.compute.dataset.DatasetRevision}
     * @param task     the task function
     * @param scorers  the scorers
     * @param suiteId  the suite, or {@code null}
     * @param metadata JSON-serializable details
     * @return the evaluation
     */
    public static Evaluation create(
            String name,
            Object dataset,
            Object task,
            List<?> scorers,
            @Nullable String suiteId,
            Map<String, ?> metadata) {
        return EnvironmentClient.evaluations().create(name, dataset, task, scorers, suiteId, metadata);
    }

    /** The evaluation's id. */
    public String id() {
        return proto.getId();
    }

    /** Its name. */
    public String name() {
        return proto.getName();
    }

    /** The dataset it reads. */
    public String datasetId() {
        return proto.getDatasetId();
    }

    /** The dataset revision it pinned: every run reads these rows. */
    public String datasetRevisionId() {
        return proto.getDatasetRevisionId();
    }

    /** The task function version it pinned. */
    public String taskFunctionVersionId() {
        return proto.getTaskFunctionVersionId();
    }

    /** Its scorers, in order, with the ids that name their columns in a run's result. */
    public List<EvaluationScorer> scorers() {
        return proto.getScorersList().stream().map(EvaluationScorer::of).toList();
    }

    /** The suite it belongs to, if any. */
    public Optional<String> suiteId() {
        return proto.getSuiteId().isEmpty() ? Optional.empty() : Optional.of(proto.getSuiteId());
    }

    /** The metadata it was created with. */
    public Map<String, Object> metadata() {
        return MetadataStruct.toMap(proto.getMetadata());
    }

    /** When it was created. */
    public Instant createdAt() {
        return Instant.ofEpochSecond(
                proto.getCreatedAt().getSeconds(), proto.getCreatedAt().getNanos());
    }

    /**
     * Starts a run without metadata; see {@link #run(Map)}.
     *
     * @return the run
     */
    public EvaluationRun run() {
        return run(Map.of());
    }

    /**
     * Starts a run: the server puts every row through the task, then each scorer, and writes the result dataset and
     * the score summary. Wait for it with {@link EvaluationRun#await(Duration)}.
     *
     * @param metadata JSON-serializable details kept with the run, such as {@code git_sha}
     * @return the run as created
     * @throws ai.chalk.compute.error.FailedPreconditionException when the server cannot run it
     */
    public EvaluationRun run(Map<String, ?> metadata) {
        return client.run(id(), metadata).named(name());
    }

    /**
     * Starts a run in an execution mode; see {@link #run(Map)}. {@link EvaluationRunExecutionMode#WORKFLOW} needs a
     * workflow orchestrator in the environment: a server without one (ours) refuses it with
     * {@code FAILED_PRECONDITION}.
     *
     * @param metadata JSON-serializable details kept with the run
     * @param mode     who drives the run
     * @return the run as created
     * @throws ai.chalk.compute.error.FailedPreconditionException when the environment cannot run it in that mode
     */
    public EvaluationRun run(Map<String, ?> metadata, EvaluationRunExecutionMode mode) {
        return client.run(id(), metadata, mode).named(name());
    }

    /**
     * Its runs that are not archived, oldest first.
     *
     * @return the runs
     */
    public List<EvaluationRun> runs() {
        return client.runs(id()).stream().map(r -> r.named(name())).toList();
    }

    /**
     * Its baseline run, if one was set.
     *
     * @return the run marked as baseline
     */
    public Optional<EvaluationRun> baseline() {
        return runs().stream().filter(EvaluationRun::isBaseline).findFirst();
    }

    @Override
    public String toString() {
        return "Evaluation[" + id() + " \"" + name() + "\" dataset revision " + datasetRevisionId() + ", "
                + scorers().size() + " scorers]";
    }
}
