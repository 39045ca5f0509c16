package ai.chalk.compute.evaluation;

import ai.chalk.compute.connection.ServerChannel;
import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.dataset.DatasetClient;
import ai.chalk.compute.dataset.DatasetRevision;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.evaluation.judge.JudgeFunction;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.catalog.FunctionVersions;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.function.remote.RemoteFunction;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.proto.evaluation.v1.ArchiveEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationSuiteRequest;
import ai.chalk.compute.proto.evaluation.v1.EvaluationRunWaitServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc.EvaluationServiceBlockingStub;
import ai.chalk.compute.proto.evaluation.v1.FunctionScorer;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationRunsRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationRunsResponse;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationSuitesRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsResponse;
import ai.chalk.compute.proto.evaluation.v1.SetEvaluationRunBaselineRequest;
import ai.chalk.compute.proto.evaluation.v1.WaitEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.WaitEvaluationRunResponse;
import ai.chalk.compute.sandbox.SandboxClient;
import io.grpc.Channel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The evaluations of the client's environment: suites to group them, evaluations that pin a dataset revision to a
 * task function and scorers, and their runs with result datasets and score summaries.
 *
 * <pre>{@code
 * EvaluationClient evaluations = client.evaluations();         // or EvaluationClient.of(channel)
 * EvaluationSuite release = evaluations.createSuite("Release");
 * Evaluation pricing = evaluations.create(
 *         "Pricing",
 *         "price_goldens",                                        // a dataset name, Dataset or DatasetRevision
 *         "price",                                                // a function name, DeployedFunction or RemoteFunction
 *         List.of(Scorers.numericClose(0.01).inputs("output", "expected"), "priceAccuracy"),
 *         release.id(),
 *         Map.of("owner", "pricing-team"));
 * EvaluationRun run = pricing.run(Map.of("git_sha", "abc123")).await(Duration.ofMinutes(10));
 * System.out.print(run.scoreSummary().orElseThrow().format());
 * }</pre>
 *
 * <p>A task or scorer is pinned by its function version when the evaluation is created: a
 * {@link DeployedFunction} is waited for (its background deployment), a {@link RemoteFunction} gives the version it
 * is pinned to (or its function's current one), a name the function's current version (after the client's
 * {@link FunctionLookup}, which a Spring application uses to wait for its own functions). Scorers may also be
 * built-ins ({@link Scorers}). A client is thread-safe and holds nothing to close; its channel stays its creator's.
 */
public final class EvaluationClient {

    private static final int PAGE = 200;
    private static final Duration DEFAULT_DEPLOYMENT_TIMEOUT = Duration.ofMinutes(10);
    /** A wait's deadline beyond the wait itself: the server's answer is on its way by then. */
    private static final Duration WAIT_GRACE = Duration.ofSeconds(10);

    /** The connection, whose trusted certificates the dataset client of a run's results follows links with. */
    private final ServerChannel server;

    private final Channel channel;
    private final EvaluationServiceBlockingStub stub;
    private final EvaluationRunWaitServiceGrpc.EvaluationRunWaitServiceBlockingStub waits;
    /** Set once the server answered that it has no EvaluationRunWaitService (Chalk's does not): runs are polled. */
    private volatile boolean waitsUnimplemented;

    private final ProgressDisplay progress;
    private final FunctionLookup lookup;
    private final Duration deploymentTimeout;

    private EvaluationClient(
            ServerChannel server, ProgressDisplay progress, FunctionLookup lookup, Duration deploymentTimeout) {
        this.server = server;
        this.channel = Objects.requireNonNull(server.channel(), "channel");
        this.stub = EvaluationServiceGrpc.newBlockingStub(channel);
        this.waits = EvaluationRunWaitServiceGrpc.newBlockingStub(channel);
        this.progress = Objects.requireNonNull(progress, "progress");
        this.lookup = Objects.requireNonNull(lookup, "lookup");
        this.deploymentTimeout = Objects.requireNonNull(deploymentTimeout, "deploymentTimeout");
    }

    /**
     * The evaluations reached through {@code client}'s connection and credentials, with runs shown on its progress
     * display; the same as {@link SandboxClient#evaluations()}.
     *
     * @param client a connected client
     * @return the client
     */
    public static EvaluationClient of(SandboxClient client) {
        return new EvaluationClient(client, client.progress(), FunctionLookup.NONE, DEFAULT_DEPLOYMENT_TIMEOUT);
    }

    /**
     * The evaluations of the server behind {@code channel}, in the environment the channel's credentials act in.
     *
     * @param channel a channel to the server, for example {@link SandboxClient#channel()}
     * @return the client
     */
    public static EvaluationClient of(Channel channel) {
        Objects.requireNonNull(channel, "channel");
        return new EvaluationClient(
                () -> channel, ProgressDisplay.fromEnv(), FunctionLookup.NONE, DEFAULT_DEPLOYMENT_TIMEOUT);
    }

    /**
     * A copy that asks {@code lookup} first for the version of a function given by name.
     *
     * @param lookup the lookup
     * @return the copy
     */
    public EvaluationClient withFunctionLookup(FunctionLookup lookup) {
        return new EvaluationClient(server, progress, lookup, deploymentTimeout);
    }

    /**
     * A copy that waits at most {@code timeout} for a task or scorer's deployment when creating an evaluation
     * (10 minutes by default).
     *
     * @param timeout how long to wait
     * @return the copy
     */
    public EvaluationClient withDeploymentTimeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the deployment timeout must be positive, got " + timeout);
        }
        return new EvaluationClient(server, progress, lookup, timeout);
    }

    /**
     * A copy whose runs show their progress on {@code progress}.
     *
     * @param progress the display
     * @return the copy
     */
    public EvaluationClient withProgress(ProgressDisplay progress) {
        return new EvaluationClient(server, progress, lookup, deploymentTimeout);
    }

    // ---- suites ----

    /**
     * Creates a suite: a named group of evaluations, such as the ones a release must pass.
     *
     * @param name 1 to 255 characters
     * @return the suite
     * @throws ai.chalk.compute.error.InvalidRequestException when the name is empty or too long
     */
    public EvaluationSuite createSuite(String name) {
        Objects.requireNonNull(name, "name");
        return EvaluationSuite.of(call(() -> stub.createEvaluationSuite(
                        CreateEvaluationSuiteRequest.newBuilder().setName(name).build()))
                .getSuite());
    }

    /**
     * Every suite of the environment, oldest first.
     *
     * @return the suites
     */
    public List<EvaluationSuite> suites() {
        return call(() -> stub.listEvaluationSuites(ListEvaluationSuitesRequest.getDefaultInstance()))
                .getSuitesList()
                .stream()
                .map(EvaluationSuite::of)
                .toList();
    }

    // ---- evaluations ----

    /**
     * Creates an evaluation outside any suite, without metadata; see
     * {@link #create(String, Object, Object, List, String, Map)}.
     *
     * @param name    the evaluation's name
     * @param dataset the dataset: its name, a {@link Dataset} (its newest completed revision is pinned) or a
     *                {@link DatasetRevision}
     * @param task    the function each row goes through
     * @param scorers the scorers
     * @return the evaluation
     */
    public Evaluation create(String name, Object dataset, Object task, List<?> scorers) {
        return create(name, dataset, task, scorers, null, Map.of());
    }

    /**
     * Creates an evaluation, pinning what it is given: the dataset's newest completed revision (or the revision
     * given), the task's and each scorer function's version, each built-in with its options. The task's parameters
     * bind to dataset columns by name; scorer functions may also take {@code output} (the task's result) and
     * {@code trace}. The server refuses, naming the parameter and the columns, a parameter that binds to nothing.
     *
     * @param name     the evaluation's name, 1 to 255 characters
     * @param dataset  the dataset: its name (a {@code String}), a {@link Dataset} or a {@link DatasetRevision}
     * @param task     the task: a {@link DeployedFunction} (its deployment is waited for), a {@link RemoteFunction},
     *                 a {@link FunctionVersion} or a function's name
     * @param scorers  the scorers, at least one: built-ins ({@link BuiltinScorer}, from {@link Scorers}), LLM judges
     *                 ({@link Scorers#llmJudge}, {@link Scorers#jev}: each is deployed, or its unchanged version found,
     *                 as the scorer function of its name, whose replicas run the judge), or scorer functions given as
     *                 the task is
     * @param suiteId  the suite to add it to, or {@code null}
     * @param metadata JSON-serializable details kept with the evaluation
     * @return the evaluation
     * @throws IllegalArgumentException                       when a task or scorer is of a type this cannot pin, or a
     *                                                        judge has a prompt or parse function, which cannot be
     *                                                        deployed
     * @throws ai.chalk.compute.error.InvalidRequestException when the server refuses it (a parameter that binds to no
     *                                                        column, an unknown built-in option, no scorers)
     * @throws ai.chalk.compute.error.NotFoundException       when the dataset, a function or the suite is unknown
     */
    public Evaluation create(
            String name,
            Object dataset,
            Object task,
            List<?> scorers,
            @Nullable String suiteId,
            Map<String, ?> metadata) {
        Objects.requireNonNull(name, "name");
        CreateEvaluationRequest.Builder request = CreateEvaluationRequest.newBuilder()
                .setName(name)
                .setMetadata(MetadataStruct.toStruct(metadata, "metadata"));
        Objects.requireNonNull(dataset, "dataset");
        if (dataset instanceof String datasetName) {
            request.setDatasetName(datasetName);
        } else if (dataset instanceof Dataset d) {
            request.setDatasetId(d.id());
        } else if (dataset instanceof DatasetRevision r) {
            request.setDatasetId(r.datasetId()).setDatasetRevisionId(r.id());
        } else {
            throw new IllegalArgumentException(
                    "dataset must be a dataset's name, a Dataset or a DatasetRevision, not a "
                            + dataset.getClass().getName());
        }
        request.setTaskFunctionVersionId(versionId(Objects.requireNonNull(task, "task"), "task"));
        for (int i = 0; i < scorers.size(); i++) {
            request.addScorers(scorer(scorers.get(i), "scorers[" + i + "]"));
        }
        if (suiteId != null) {
            request.setSuiteId(suiteId);
        }
        return new Evaluation(
                this, call(() -> stub.createEvaluation(request.build())).getEvaluation());
    }

    /**
     * An evaluation by id.
     *
     * @param evaluationId its id
     * @return the evaluation
     * @throws ai.chalk.compute.error.EvaluationNotFoundException when the environment has none such
     */
    public Evaluation get(String evaluationId) {
        return new Evaluation(
                this,
                call(() -> stub.getEvaluation(GetEvaluationRequest.newBuilder()
                                .setEvaluationId(evaluationId)
                                .build()))
                        .getEvaluation());
    }

    /**
     * Every evaluation of the environment, oldest first (all pages).
     *
     * @return the evaluations
     */
    public List<Evaluation> list() {
        return list(null);
    }

    /**
     * Every evaluation of one suite, oldest first (all pages).
     *
     * @param suiteId the suite's id, or {@code null} for every evaluation
     * @return the evaluations
     */
    public List<Evaluation> list(@Nullable String suiteId) {
        List<Evaluation> out = new ArrayList<>();
        String cursor = null;
        do {
            ListEvaluationsRequest.Builder request =
                    ListEvaluationsRequest.newBuilder().setLimit(PAGE);
            if (cursor != null) {
                request.setCursor(cursor);
            }
            if (suiteId != null) {
                request.setSuiteId(suiteId);
            }
            ListEvaluationsResponse page = call(() -> stub.listEvaluations(request.build()));
            page.getEvaluationsList().forEach(e -> out.add(new Evaluation(this, e)));
            cursor = page.hasNextCursor() && !page.getNextCursor().isEmpty() ? page.getNextCursor() : null;
        } while (cursor != null);
        return out;
    }

    // ---- runs ----

    /**
     * Starts a run of an evaluation; the server executes it. {@link EvaluationRun#await(Duration)} waits for it.
     *
     * @param evaluationId the evaluation
     * @param metadata     JSON-serializable details kept with the run, such as the git commit
     * @return the run, as created (usually {@link EvaluationRunStatus#PENDING})
     */
    public EvaluationRun run(String evaluationId, Map<String, ?> metadata) {
        return run(evaluationId, metadata, EvaluationRunExecutionMode.SERVER);
    }

    /**
     * Starts a run of an evaluation in an execution mode: {@link EvaluationRunExecutionMode#WORKFLOW} asks for a
     * workflow on the environment's orchestrator to drive it (sent as the metadata's {@code execution_mode}).
     *
     * @param evaluationId the evaluation
     * @param metadata     JSON-serializable details kept with the run; an {@code execution_mode} in it must agree
     *                     with {@code mode}
     * @param mode         who drives the run
     * @return the run, as created
     * @throws ai.chalk.compute.error.FailedPreconditionException when the environment cannot run it in that mode
     *                                                            (a server without a workflow orchestrator refuses
     *                                                            {@code WORKFLOW})
     * @throws IllegalArgumentException                           when the metadata names another mode
     */
    public EvaluationRun run(String evaluationId, Map<String, ?> metadata, EvaluationRunExecutionMode mode) {
        Objects.requireNonNull(mode, "mode");
        Map<String, Object> sent = new java.util.LinkedHashMap<>(Objects.requireNonNull(metadata, "metadata"));
        Object given = sent.get(EvaluationRunExecutionMode.METADATA_KEY);
        if (given != null && EvaluationRunExecutionMode.of(given) != mode) {
            throw new IllegalArgumentException("metadata." + EvaluationRunExecutionMode.METADATA_KEY + " is \"" + given
                    + "\" but the mode asked for is " + mode + "; pass the mode alone");
        }
        if (mode == EvaluationRunExecutionMode.WORKFLOW) {
            sent.put(EvaluationRunExecutionMode.METADATA_KEY, mode.wireName());
        }
        return new EvaluationRun(
                this,
                call(() -> stub.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                                .setEvaluationId(evaluationId)
                                .setMetadata(MetadataStruct.toStruct(sent, "metadata"))
                                .build()))
                        .getEvaluationRun());
    }

    /**
     * A run by id, as it stands now.
     *
     * @param runId the run's id
     * @return the run
     * @throws ai.chalk.compute.error.EvaluationNotFoundException when the environment has none such
     */
    public EvaluationRun getRun(String runId) {
        return new EvaluationRun(this, fetchRun(runId));
    }

    /**
     * Every run of an evaluation that is not archived, oldest first (all pages).
     *
     * @param evaluationId the evaluation
     * @return the runs
     */
    public List<EvaluationRun> runs(String evaluationId) {
        List<EvaluationRun> out = new ArrayList<>();
        String cursor = null;
        do {
            ListEvaluationRunsResponse page = runsPage(evaluationId, cursor);
            page.getEvaluationRunsList().forEach(r -> out.add(new EvaluationRun(this, r)));
            cursor = page.hasNextCursor() && !page.getNextCursor().isEmpty() ? page.getNextCursor() : null;
        } while (cursor != null);
        return out;
    }

    /**
     * Makes a run its evaluation's baseline, the one later runs are compared with; the previous baseline is one no
     * more.
     *
     * @param runId the run
     * @return the run, now the baseline
     */
    public EvaluationRun setBaseline(String runId) {
        return new EvaluationRun(
                this,
                call(() -> stub.setEvaluationRunBaseline(SetEvaluationRunBaselineRequest.newBuilder()
                                .setEvaluationRunId(runId)
                                .build()))
                        .getEvaluationRun());
    }

    /**
     * Archives a run: it no longer appears in {@link #runs(String)}; its result dataset stays.
     *
     * @param runId the run
     */
    public void archive(String runId) {
        call(() -> stub.archiveEvaluationRun(ArchiveEvaluationRunRequest.newBuilder()
                .setEvaluationRunId(runId)
                .build()));
    }

    // ---- for the handles ----

    ai.chalk.compute.proto.evaluation.v1.EvaluationRun fetchRun(String runId) {
        return call(() -> stub.getEvaluationRun(GetEvaluationRunRequest.newBuilder()
                        .setEvaluationRunId(runId)
                        .build()))
                .getEvaluationRun();
    }

    /**
     * Waits on the server until a run's status is other than {@code seen} or {@code wait} has passed.
     *
     * @return the run and its summary or progress as the server answered; empty when the server has no
     *         {@code EvaluationRunWaitService} (the caller then polls {@link #fetchRun})
     */
    Optional<WaitEvaluationRunResponse> waitRun(
            String runId, ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus seen, Duration wait) {
        if (waitsUnimplemented) {
            return Optional.empty();
        }
        WaitEvaluationRunRequest request = WaitEvaluationRunRequest.newBuilder()
                .setEvaluationRunId(runId)
                .setStatus(seen)
                .setTimeout(com.google.protobuf.Duration.newBuilder()
                        .setSeconds(wait.getSeconds())
                        .setNanos(wait.getNano()))
                .build();
        try {
            // the deadline leaves the server its wait and then time to answer
            return Optional.of(call(() -> waits.withDeadlineAfter(
                            wait.plus(WAIT_GRACE).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
                    .waitEvaluationRun(request)));
        } catch (ChalkComputeException e) {
            if (e.statusCode() == io.grpc.Status.Code.UNIMPLEMENTED) {
                waitsUnimplemented = true;
                return Optional.empty();
            }
            throw e;
        }
    }

    /** The score summary of one run, which the server gives with its evaluation's runs. */
    Optional<ScoreSummary> summary(String evaluationId, String runId) {
        String cursor = null;
        do {
            ListEvaluationRunsResponse page = runsPage(evaluationId, cursor);
            for (var s : page.getScoreSummariesList()) {
                if (s.getEvaluationRunId().equals(runId)) {
                    return Optional.of(ScoreSummary.of(s));
                }
            }
            cursor = page.hasNextCursor() && !page.getNextCursor().isEmpty() ? page.getNextCursor() : null;
        } while (cursor != null);
        return Optional.empty();
    }

    private ListEvaluationRunsResponse runsPage(String evaluationId, @Nullable String cursor) {
        ListEvaluationRunsRequest.Builder request = ListEvaluationRunsRequest.newBuilder()
                .setEvaluationId(evaluationId)
                .setLimit(PAGE);
        if (cursor != null) {
            request.setCursor(cursor);
        }
        return call(() -> stub.listEvaluationRuns(request.build()));
    }

    DatasetClient datasets() {
        return DatasetClient.of(server);
    }

    ProgressDisplay progress() {
        return progress;
    }

    private EvaluationScorerSpec scorer(@Nullable Object scorer, String where) {
        if (scorer instanceof BuiltinScorer builtin) {
            return builtin.toSpec();
        }
        if (JudgeFunction.isJudge(scorer)) {
            // deployed as its scorer function (reused when unchanged), whose replicas run the judge
            String versionId;
            try {
                versionId = JudgeFunction.deploy((Scorer) scorer, channel).id();
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + ": " + e.getMessage(), e);
            }
            return EvaluationScorerSpec.newBuilder()
                    .setFunction(FunctionScorer.newBuilder().setFunctionVersionId(versionId))
                    .build();
        }
        return EvaluationScorerSpec.newBuilder()
                .setFunction(FunctionScorer.newBuilder().setFunctionVersionId(versionId(scorer, where)))
                .build();
    }

    /** The version to pin for a task or scorer function. */
    private String versionId(@Nullable Object function, String where) {
        if (function == null) {
            throw new IllegalArgumentException(where + " is null");
        }
        if (function instanceof DeployedFunction deployed) {
            return deployed.await(deploymentTimeout).id();
        }
        if (function instanceof RemoteFunction remote) {
            return remote.versionId()
                    .orElseGet(() -> remote.versions().stream()
                            .filter(FunctionVersion::current)
                            .findFirst()
                            .orElseThrow(() -> new IllegalArgumentException(
                                    where + ": the function " + remote.name() + " has no current version"))
                            .id());
        }
        if (function instanceof FunctionVersion version) {
            return version.id();
        }
        if (function instanceof String name) {
            if (name.isBlank()) {
                throw new IllegalArgumentException(where + " is a blank function name");
            }
            return lookup.versionId(name, deploymentTimeout)
                    .orElseGet(() -> new FunctionVersions(channel).current(name).id());
        }
        throw new IllegalArgumentException(
                where + " is a " + function.getClass().getName()
                        + "; give a DeployedFunction, RemoteFunction, FunctionVersion or a function's name"
                        + (where.startsWith("scorers") ? ", or a built-in from Scorers" : ""));
    }

    private static <T> T call(java.util.function.Supplier<T> call) {
        return ServerCall.run(ResourceKind.EVALUATION, call);
    }

    @Override
    public String toString() {
        return "EvaluationClient[" + channel.authority() + "]";
    }

    static ChalkComputeException timeout(String what, Duration timeout) {
        return new ChalkComputeException(
                io.grpc.Status.Code.DEADLINE_EXCEEDED,
                what + " did not end within " + timeout + "; it goes on on the server");
    }
}
