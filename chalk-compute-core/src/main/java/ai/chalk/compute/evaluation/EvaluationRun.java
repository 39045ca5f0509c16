package ai.chalk.compute.evaluation;

import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.progress.ProgressGroup;
import com.google.protobuf.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * One run of an {@link Evaluation}, as the server described it when asked: {@link #refresh()} asks again,
 * {@link #await(Duration)} until it ends. A finished run has a result dataset (input columns, {@code output}, each
 * scorer's score and metadata columns and a per-row error column) that {@code DatasetClient} downloads and
 * {@code SQLClient} queries ({@link #resultTable()}), and a {@link ScoreSummary}.
 * <pre>{@code
 * EvaluationRun run = evaluation.run(Map.of("git_sha", "abc123")).await(Duration.ofMinutes(10));
 * if (run.status() == EvaluationRunStatus.SUCCEEDED) {
 *     System.out.print(run.scoreSummary().orElseThrow().format());
 *     sql.query("SELECT * FROM " + run.resultTable().orElseThrow() + " WHERE error IS NOT NULL");
 * }
 * }</pre>
 * A row whose task failed is recorded in the result and scored as failed; the run itself fails only when the task
 * cannot run at all ({@link #errorMessage()} says why).
 */
public final class EvaluationRun {

    private static final Duration FIRST_POLL = Duration.ofMillis(50);
    private static final Duration MAX_POLL = Duration.ofMillis(250);
    /**
     * The longest a wait on the server lasts when the run does not move on: how late a progress line may be. A run's
     * end is seen at once whatever this is (the server answers a wait when the status changes).
     */
    private static final Duration PROGRESS_WAIT = Duration.ofMillis(500);
    /** The metric of the server's summary of a run under way that counts its rows done. */
    private static final String ROWS_DONE = "rows_done";
    /** A running run's progress prints a line each time it passes another tenth of its rows. */
    private static final int PROGRESS_STEPS = 10;

    private final EvaluationClient client;
    private final ai.chalk.compute.proto.evaluation.v1.EvaluationRun proto;
    private final @Nullable String evaluationName;

    EvaluationRun(EvaluationClient client, ai.chalk.compute.proto.evaluation.v1.EvaluationRun proto) {
        this(client, proto, null);
    }

    private EvaluationRun(
            EvaluationClient client,
            ai.chalk.compute.proto.evaluation.v1.EvaluationRun proto,
            @Nullable String evaluationName) {
        this.client = Objects.requireNonNull(client, "client");
        this.proto = Objects.requireNonNull(proto, "proto");
        this.evaluationName = evaluationName;
    }

    EvaluationRun named(String name) {
        return new EvaluationRun(client, proto, name);
    }

    /** The run's id. */
    public String id() {
        return proto.getId();
    }

    /** The evaluation it runs. */
    public String evaluationId() {
        return proto.getEvaluationId();
    }

    /** Where it stood when this was read. */
    public EvaluationRunStatus status() {
        return EvaluationRunStatus.of(proto.getStatus());
    }

    /** Why it failed, when it did. */
    public Optional<String> errorMessage() {
        return proto.hasErrorMessage() && !proto.getErrorMessage().isEmpty()
                ? Optional.of(proto.getErrorMessage())
                : Optional.empty();
    }

    /** Whether it is its evaluation's baseline. */
    public boolean isBaseline() {
        return proto.getIsBaseline();
    }

    /** The metadata it was started with. */
    public Map<String, Object> metadata() {
        return MetadataStruct.toMap(proto.getMetadata());
    }

    /** Who drives it: {@link EvaluationRunExecutionMode#WORKFLOW} when its metadata's {@code execution_mode} says so. */
    public EvaluationRunExecutionMode executionMode() {
        com.google.protobuf.Value v = proto.getMetadata().getFieldsMap().get(EvaluationRunExecutionMode.METADATA_KEY);
        return EvaluationRunExecutionMode.of(v == null ? null : v.getStringValue());
    }

    /** When it was created. */
    public Instant createdAt() {
        return instant(proto.getCreatedAt());
    }

    /** When it started running, once it has. */
    public Optional<Instant> startedAt() {
        return proto.hasStartedAt() ? Optional.of(instant(proto.getStartedAt())) : Optional.empty();
    }

    /** When it ended, once it has. */
    public Optional<Instant> completedAt() {
        return proto.hasCompletedAt() ? Optional.of(instant(proto.getCompletedAt())) : Optional.empty();
    }

    /** The dataset its result is a revision of, once written. */
    public Optional<String> resultDatasetId() {
        return proto.hasResultDatasetId() && !proto.getResultDatasetId().isEmpty()
                ? Optional.of(proto.getResultDatasetId())
                : Optional.empty();
    }

    /** The result's dataset revision, once written: what {@code DatasetClient.download} and SQL read. */
    public Optional<String> resultRevisionId() {
        return proto.hasResultDatasetRevisionId()
                        && !proto.getResultDatasetRevisionId().isEmpty()
                ? Optional.of(proto.getResultDatasetRevisionId())
                : Optional.empty();
    }

    /**
     * The result dataset, as the server describes it now.
     *
     * @return the dataset, once the run has written it
     */
    public Optional<Dataset> resultDataset() {
        return resultDatasetId().map(id -> client.datasets().get(id));
    }

    /**
     * The result as a table {@code SQLClient} queries: {@code chalk.dataset_revisions."<revision id>"}.
     *
     * @return the table name, once the run has written its result
     */
    public Optional<String> resultTable() {
        return resultRevisionId().map(r -> "chalk.dataset_revisions.\"" + r + "\"");
    }

    /**
     * The run's scores, as the server summarizes them.
     *
     * @return the summary, once the run has succeeded (as this description says: {@link #refresh()} a run under way)
     */
    public Optional<ScoreSummary> scoreSummary() {
        // while a run is under way the server's summary of it is its progress (rows_done), not its scores
        return status().isTerminal() ? client.summary(evaluationId(), id()) : Optional.empty();
    }

    /** Rows done, as the server's summary of a run under way counts them; -1 when it does not say. */
    private long rowsDone() {
        return client.summary(evaluationId(), id())
                .map(s -> s.metrics().get(ROWS_DONE))
                .map(Double::longValue)
                .orElse(-1L);
    }

    /**
     * The run as it stands now.
     *
     * @return a fresh description
     */
    public EvaluationRun refresh() {
        return new EvaluationRun(client, client.fetchRun(id()), evaluationName);
    }

    /**
     * Waits until the run ends ({@link EvaluationRunStatus#isTerminal()}), showing it as the progress group
     * {@code Evaluation "<name>"}: its status changes; while it runs, its rows done out of the dataset's rows (a line
     * each tenth, from the {@code rows_done} metric of the summary the server gives for a run under way); at the end
     * the rows done and the average score, or why it failed. A failed run is returned, not thrown: check {@link #status()}.
     * It waits on the server, which answers as soon as the run moves on, so the run's end is seen when it happens; a
     * server without that wait (Chalk's hosted service) is polled, 50 ms doubling to 250 ms apart.
     *
     * @param timeout how long to wait
     * @return the run as it ended
     * @throws ChalkComputeException {@code DEADLINE_EXCEEDED} when it has not ended in time (it goes on on the
     *                               server), {@code CANCELLED} when the thread is interrupted
     */
    public EvaluationRun await(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        long deadline = System.nanoTime() + timeout.toNanos();
        EvaluationRun current = this;
        String name = evaluationName != null
                ? evaluationName
                : client.get(evaluationId()).name();
        long total = -1;
        int shownStep = -1;
        Duration pause = FIRST_POLL;
        // the server's summary or progress of the run, when its last answer was a wait's (which carries it)
        Optional<ai.chalk.compute.proto.evaluation.v1.EvaluationScoreSummary> waited = Optional.empty();
        boolean waits = true;
        try (ProgressGroup group = client.progress().open("Evaluation \"" + name + "\"")) {
            while (true) {
                EvaluationRunStatus status = current.status();
                if (status.isTerminal()) {
                    finish(group, current, total, waited.map(ScoreSummary::of));
                    return current.named(name);
                }
                if (total < 0) {
                    total = rows(client.get(evaluationId()).datasetRevisionId());
                }
                long done = -1;
                if (status == EvaluationRunStatus.RUNNING && total > 0) {
                    done = waits
                            ? waited.map(s -> s.getMetricsMap().get(ROWS_DONE))
                                    .map(Double::longValue)
                                    .orElse(-1L)
                            : current.rowsDone();
                }
                if (done >= 0) {
                    // rows done / total, a line per tenth passed: the display prints every change it is given
                    int step = (int) Math.min(PROGRESS_STEPS, done * PROGRESS_STEPS / total);
                    if (step > shownStep) {
                        shownStep = step;
                        group.step("Running: " + done + "/" + total + " rows through the task and scorers");
                    }
                } else {
                    group.step(
                            switch (status) {
                                case PENDING -> "Pending";
                                case RUNNING ->
                                    total >= 0 ? "Running: " + total + " rows through the task and scorers" : "Running";
                                case FINALIZING -> "Finalizing: writing the result dataset and the score summary";
                                default -> status.toString();
                            });
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    group.fail("Still " + status.toString().toLowerCase(Locale.ROOT) + " after " + timeout
                            + "; it goes on on the server");
                    throw EvaluationClient.timeout("evaluation run " + id(), timeout);
                }
                if (waits) {
                    // the server answers as soon as the run moves on (its end is seen at once, not at the next
                    // poll), and at least every PROGRESS_WAIT with the rows done for the display
                    Duration wait = Duration.ofNanos(Math.min(PROGRESS_WAIT.toNanos(), left));
                    Optional<ai.chalk.compute.proto.evaluation.v1.WaitEvaluationRunResponse> answer =
                            client.waitRun(id(), current.proto.getStatus(), wait);
                    if (answer.isPresent()) {
                        current = new EvaluationRun(client, answer.get().getEvaluationRun(), evaluationName);
                        waited = answer.get().hasScoreSummary()
                                ? Optional.of(answer.get().getScoreSummary())
                                : Optional.empty();
                        continue;
                    }
                    waits = false; // a server without waits (Chalk's): poll
                }
                try {
                    Thread.sleep(Math.min(pause.toMillis(), Math.max(1, left / 1_000_000)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ChalkComputeException(
                            io.grpc.Status.Code.CANCELLED, "interrupted waiting for evaluation run " + id());
                }
                pause = pause.multipliedBy(2).compareTo(MAX_POLL) > 0 ? MAX_POLL : pause.multipliedBy(2);
                current = current.refresh();
            }
        }
    }

    private void finish(ProgressGroup group, EvaluationRun run, long total, Optional<ScoreSummary> known) {
        switch (run.status()) {
            case SUCCEEDED -> {
                Optional<ScoreSummary> summary = known.isPresent() ? known : run.scoreSummary();
                Double done = summary.map(s -> s.metrics().get("rows")).orElse(null);
                Double failed = summary.map(s -> s.metrics().get("failed_rows")).orElse(null);
                long rows = total >= 0 ? total : done != null ? done.longValue() : -1;
                StringBuilder line = new StringBuilder("Succeeded");
                if (done != null) {
                    line.append(": ").append(done.longValue());
                    if (rows >= 0) {
                        line.append('/').append(rows);
                    }
                    line.append(" rows");
                    if (failed != null && failed > 0) {
                        line.append(", ").append(failed.longValue()).append(" failed");
                    }
                }
                summary.flatMap(s -> s.averageScore().isPresent()
                                ? Optional.of(s.averageScore().getAsDouble())
                                : Optional.empty())
                        .ifPresent(avg -> line.append(String.format(Locale.ROOT, ", average score %.3f", avg)));
                group.succeed(line.toString());
            }
            case FAILED -> group.fail("Failed: " + run.errorMessage().orElse("no reason given"));
            default -> group.fail("Canceled");
        }
    }

    /** The rows of the pinned revision, or -1 when it cannot be read (the display then shows no total). */
    private long rows(String revisionId) {
        try {
            return client.datasets().revision(revisionId).rows();
        } catch (ChalkComputeException e) {
            return -1;
        }
    }

    /**
     * Makes this run its evaluation's baseline.
     *
     * @return the run, now the baseline
     */
    public EvaluationRun setBaseline() {
        EvaluationRun run = client.setBaseline(id());
        return evaluationName != null ? run.named(evaluationName) : run;
    }

    /** Archives this run: it no longer appears among its evaluation's runs; its result dataset stays. */
    public void archive() {
        client.archive(id());
    }

    private static Instant instant(Timestamp t) {
        return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
    }

    @Override
    public String toString() {
        return "EvaluationRun[" + id() + " " + status() + (isBaseline() ? ", baseline" : "")
                + errorMessage().map(m -> ": " + m).orElse("") + "]";
    }
}
