package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.evaluation.v1.ArchiveEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.ArchiveEvaluationRunResponse;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationResponse;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRunResponse;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationSuiteRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationSuiteResponse;
import ai.chalk.compute.proto.evaluation.v1.Evaluation;
import ai.chalk.compute.proto.evaluation.v1.EvaluationRun;
import ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorers;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.EvaluationSuite;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationResponse;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRunResponse;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationRunsRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationRunsResponse;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationSuitesRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationSuitesResponse;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsResponse;
import ai.chalk.compute.proto.evaluation.v1.SetEvaluationRunBaselineRequest;
import ai.chalk.compute.proto.evaluation.v1.SetEvaluationRunBaselineResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.function.FunctionCalls;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.EvaluationRunStore;
import ai.chalk.compute.server.store.EvaluationRunStore.RunRecord;
import ai.chalk.compute.server.store.EvaluationStore;
import ai.chalk.compute.server.store.EvaluationStore.EvaluationRecord;
import ai.chalk.compute.server.store.EvaluationStore.SuiteRecord;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import ai.chalk.compute.server.threads.EnvironmentShares;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.Timestamp;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/**
 * {@code chalk.evaluation.v1.EvaluationService}: the evaluation suites and evaluations of the caller's environment
 * ({@link Caller}); another environment's are NOT_FOUND, as ones never created. An evaluation pins at creation what it
 * is given ({@link EvaluationPins}). Runs are executed by this server ({@link EvaluationRuns}); archiving a run that is
 * still open cancels it, as the contract has no cancel RPC. A run's {@code metadata} may say
 * {@code execution_mode: "workflow"}, which this server refuses: it has no workflow orchestrator.
 */
public final class EvaluationServiceV1 extends EvaluationServiceGrpc.EvaluationServiceImplBase {

    private static final int MAX_NAME = 255;
    static final int MAX_METADATA_BYTES = 64 << 10;

    /** The run metadata key naming how the run is driven, as the SDK's {@code execution_mode}. */
    static final String EXECUTION_MODE = "execution_mode";

    private final EvaluationStore store;
    private final EvaluationRunStore runStore;
    private final EvaluationPins pins;
    private final EvaluationRuns runs;
    private final Clock clock;
    private final EvaluationRunWaitServiceV1 waits;

    EvaluationServiceV1(
            EvaluationStore store, EvaluationRunStore runStore, EvaluationPins pins, EvaluationRuns runs, Clock clock) {
        this.store = store;
        this.runStore = runStore;
        this.pins = pins;
        this.runs = runs;
        this.clock = clock;
        this.waits = new EvaluationRunWaitServiceV1(runStore, this);
    }

    /** The waits for this service's runs ({@code chalk_compute.evaluation.v1.EvaluationRunWaitService}). */
    public EvaluationRunWaitServiceV1 waits() {
        return waits;
    }

    /**
     * The service over {@code store}, pinning datasets and function versions of the caller's environment.
     *
     * @param runStore the runs, whose interrupted ones the caller has already failed ({@link EvaluationRunStore#recover})
     * @param calls    how runs call task and scorer versions: the pools of remote calls
     * @param secrets  a secret's value by environment and name, or null when there is none
     * @param workDir  where runs write their result files before they become dataset revisions
     * @param executor runs and their batches (a cached pool: a run waits on its own batches)
     * @param memory   what the runs under way may hold in the heap together
     */
    public static EvaluationServiceV1 create(
            EvaluationStore store,
            EvaluationRunStore runStore,
            DatasetManager datasets,
            FunctionStore functions,
            FunctionCalls calls,
            BiFunction<String, String, @Nullable String> secrets,
            Path workDir,
            ExecutorService executor,
            ByteBudget memory) {
        EvaluationPins pins = new EvaluationPins(datasets, functions, secrets);
        Clock clock = Clock.systemUTC();
        return new EvaluationServiceV1(
                store,
                runStore,
                pins,
                new EvaluationRuns(runStore, datasets, functions, calls, pins, workDir, executor, memory, clock),
                clock);
    }

    /** The server is stopping: runs under way are left for the next start to fail ({@link EvaluationRunStore#recover}). */
    public void stop() {
        runs.stop();
        waits.stop();
    }

    @Override
    public void createEvaluationSuite(
            CreateEvaluationSuiteRequest request, StreamObserver<CreateEvaluationSuiteResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String name = name("name", request.getName());
            SuiteRecord s = store.insertSuite(environment(), "evs-" + UUID.randomUUID(), name, now());
            return CreateEvaluationSuiteResponse.newBuilder().setSuite(suite(s)).build();
        });
    }

    @Override
    public void listEvaluationSuites(
            ListEvaluationSuitesRequest request, StreamObserver<ListEvaluationSuitesResponse> observer) {
        StatusErrors.unary(observer, () -> {
            ListEvaluationSuitesResponse.Builder b = ListEvaluationSuitesResponse.newBuilder();
            store.suites(environment()).forEach(s -> b.addSuites(suite(s)));
            return b.build();
        });
    }

    @Override
    public void createEvaluation(CreateEvaluationRequest request, StreamObserver<CreateEvaluationResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = environment();
            String name = name("name", request.getName());
            String suiteId = null;
            if (request.hasSuiteId() && !request.getSuiteId().isEmpty()) {
                suiteId = store.suite(environment, request.getSuiteId())
                        .orElseThrow(() -> ComputeException.notFound("suite_id: there is no evaluation suite \""
                                + request.getSuiteId() + "\" in this environment; ListEvaluationSuites lists them"))
                        .id();
            }
            EvaluationPins.PinnedDataset dataset = pins.dataset(
                    environment, request.getDatasetId(), request.getDatasetName(), request.getDatasetRevisionId());
            VersionRecord task = pins.task(environment, request.getTaskFunctionVersionId(), dataset.columns());
            List<EvaluationScorer> scorers = pins.scorers(environment, request.getScorersList(), dataset.columns());
            if (scorers.isEmpty()) {
                throw ComputeException.invalid("an evaluation needs at least one scorer in scorers: a builtin (such as"
                        + " exact_match) or a scorer function's version id");
            }
            EvaluationRecord e = store.insertEvaluation(new EvaluationRecord(
                    0,
                    "eval-" + UUID.randomUUID(),
                    environment,
                    suiteId,
                    name,
                    dataset.datasetId(),
                    dataset.revisionId(),
                    task.id(),
                    EvaluationScorers.newBuilder()
                            .addAllScorers(scorers)
                            .build()
                            .toByteArray(),
                    metadata(request.getMetadata()),
                    now()));
            return CreateEvaluationResponse.newBuilder()
                    .setEvaluation(evaluation(e))
                    .build();
        });
    }

    @Override
    public void getEvaluation(GetEvaluationRequest request, StreamObserver<GetEvaluationResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetEvaluationResponse.newBuilder()
                        .setEvaluation(evaluation(find(request.getEvaluationId())))
                        .build());
    }

    @Override
    public void listEvaluations(ListEvaluationsRequest request, StreamObserver<ListEvaluationsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long after = Pages.cursor(request.hasCursor(), request.getCursor());
            String suite = request.hasSuiteId() && !request.getSuiteId().isEmpty() ? request.getSuiteId() : null;
            List<EvaluationRecord> page = store.evaluations(environment(), suite, after, limit + 1);
            ListEvaluationsResponse.Builder b = ListEvaluationsResponse.newBuilder();
            page.stream().limit(limit).forEach(e -> {
                b.addEvaluations(evaluation(e));
                latestSummary(e).ifPresent(b::addScoreSummaries);
            });
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    /** The summary of the evaluation's newest run that has one (archived runs left out). */
    private Optional<EvaluationScoreSummary> latestSummary(EvaluationRecord e) {
        Optional<EvaluationScoreSummary> latest = Optional.empty();
        long after = 0;
        for (List<RunRecord> page; !(page = runStore.runs(e.environment(), e.id(), after, 500)).isEmpty(); ) {
            for (RunRecord r : page) {
                after = r.seq();
                Optional<EvaluationScoreSummary> s = summary(r);
                if (s.isPresent()) {
                    latest = s;
                }
            }
        }
        return latest;
    }

    @Override
    public void createEvaluationRun(
            CreateEvaluationRunRequest request, StreamObserver<CreateEvaluationRunResponse> observer) {
        StatusErrors.unary(observer, () -> {
            if (request.getEvaluationId().isEmpty()) {
                throw ComputeException.invalid("evaluation_id is required: the evaluation to run");
            }
            EvaluationRecord e = find(request.getEvaluationId());
            com.google.protobuf.Value mode =
                    request.getMetadata().getFieldsMap().get(EXECUTION_MODE);
            if (mode != null && mode.getStringValue().equalsIgnoreCase("workflow")) {
                throw ComputeException.refused(
                        "metadata." + EXECUTION_MODE + " is \"workflow\", but this environment has"
                                + " no workflow orchestrator: leave execution_mode out (or \"server\") and this server runs"
                                + " the evaluation itself");
            }
            EnvironmentShares.Place place = runs.admit(e.environment());
            RunRecord run;
            List<EvaluationScorer> scorers;
            try {
                scorers = scorers(e);
                run = runStore.insert(
                        e.environment(), "evr-" + UUID.randomUUID(), e.id(), metadata(request.getMetadata()), now());
            } catch (RuntimeException failure) {
                place.close(); // not created: nothing runs it
                throw failure;
            }
            runs.start(place, run, e, scorers);
            return CreateEvaluationRunResponse.newBuilder()
                    .setEvaluationRun(run(run))
                    .build();
        });
    }

    @Override
    public void getEvaluationRun(GetEvaluationRunRequest request, StreamObserver<GetEvaluationRunResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetEvaluationRunResponse.newBuilder()
                        .setEvaluationRun(run(findRun(request.getEvaluationRunId())))
                        .build());
    }

    @Override
    public void listEvaluationRuns(
            ListEvaluationRunsRequest request, StreamObserver<ListEvaluationRunsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String environment = environment();
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long after = Pages.cursor(request.hasCursor(), request.getCursor());
            String evaluationId =
                    request.hasEvaluationId() && !request.getEvaluationId().isEmpty()
                            ? request.getEvaluationId()
                            : null;
            String suiteId = request.hasSuiteId() && !request.getSuiteId().isEmpty() ? request.getSuiteId() : null;
            Map<String, Optional<EvaluationRecord>> evaluations = new LinkedHashMap<>();
            List<RunRecord> page = new ArrayList<>();
            // a suite filters by the runs' evaluations: read on until the page is full or the runs end
            while (page.size() <= limit) {
                List<RunRecord> batch = runStore.runs(environment, evaluationId, after, limit + 1);
                for (RunRecord r : batch) {
                    after = r.seq();
                    Optional<EvaluationRecord> e =
                            evaluations.computeIfAbsent(r.evaluationId(), id -> store.evaluation(environment, id));
                    if (suiteId == null
                            || e.map(x -> suiteId.equals(x.suiteId())).orElse(false)) {
                        page.add(r);
                        if (page.size() > limit) {
                            break;
                        }
                    }
                }
                if (batch.size() <= limit) {
                    break;
                }
            }
            ListEvaluationRunsResponse.Builder b = ListEvaluationRunsResponse.newBuilder();
            page.stream().limit(limit).forEach(r -> {
                b.addEvaluationRuns(run(r));
                summaryOrProgress(r).ifPresent(b::addScoreSummaries);
            });
            page.stream()
                    .limit(limit)
                    .map(RunRecord::evaluationId)
                    .distinct()
                    .forEach(id -> evaluations.get(id).ifPresent(e -> b.addEvaluations(evaluation(e))));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void setEvaluationRunBaseline(
            SetEvaluationRunBaselineRequest request, StreamObserver<SetEvaluationRunBaselineResponse> observer) {
        StatusErrors.unary(observer, () -> {
            RunRecord r = findRun(request.getEvaluationRunId());
            runStore.setBaseline(environment(), r.id());
            return SetEvaluationRunBaselineResponse.newBuilder()
                    .setEvaluationRun(run(findRun(r.id())))
                    .build();
        });
    }

    @Override
    public void archiveEvaluationRun(
            ArchiveEvaluationRunRequest request, StreamObserver<ArchiveEvaluationRunResponse> observer) {
        StatusErrors.unary(observer, () -> {
            RunRecord r = findRun(request.getEvaluationRunId());
            if (!r.status().terminal()) {
                runs.cancel(r.id(), "canceled: the run was archived while it was " + r.status());
            }
            runStore.archive(environment(), r.id(), now());
            return ArchiveEvaluationRunResponse.newBuilder()
                    .setEvaluationRunId(r.id())
                    .build();
        });
    }

    RunRecord findRun(String id) {
        if (id.isEmpty()) {
            throw ComputeException.invalid("evaluation_run_id is required");
        }
        return runStore.run(environment(), id)
                .orElseThrow(() -> ComputeException.notFound("there is no evaluation run \"" + id
                        + "\" in this environment; ListEvaluationRuns lists them"));
    }

    private static List<EvaluationScorer> scorers(EvaluationRecord e) {
        try {
            return EvaluationScorers.parseFrom(e.scorers()).getScorersList();
        } catch (InvalidProtocolBufferException ex) {
            throw new IllegalStateException("the stored evaluation " + e.id() + " is unreadable", ex);
        }
    }

    /**
     * A run's summary, or while it runs here, how far it has got ({@link ScoreSummaries#ROWS_DONE} of
     * {@link ScoreSummaries#ROWS}): clients show it as the run's progress.
     */
    Optional<EvaluationScoreSummary> summaryOrProgress(RunRecord r) {
        Optional<EvaluationScoreSummary> s = summary(r);
        if (s.isPresent() || r.status().terminal()) {
            return s;
        }
        return runs.progress(r.id())
                .map(p -> ScoreSummaries.progress(r.evaluationId(), r.id(), p.rowsDone(), p.rows(), now()));
    }

    private static Optional<EvaluationScoreSummary> summary(RunRecord r) {
        if (r.summary() == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(EvaluationScoreSummary.parseFrom(r.summary()));
        } catch (InvalidProtocolBufferException ex) {
            throw new IllegalStateException("the stored summary of run " + r.id() + " is unreadable", ex);
        }
    }

    /** A run's status as the contract names it. */
    static EvaluationRunStatus status(RunRecord r) {
        return EvaluationRunStatus.valueOf("EVALUATION_RUN_STATUS_" + r.status().name());
    }

    static EvaluationRun run(RunRecord r) {
        try {
            EvaluationRun.Builder b = EvaluationRun.newBuilder()
                    .setId(r.id())
                    .setEnvironmentId(r.environment())
                    .setEvaluationId(r.evaluationId())
                    .setStatus(status(r))
                    .setMetadata(Struct.parseFrom(r.metadata()))
                    .setCreatedAt(timestamp(r.createdAt()))
                    .setIsBaseline(r.baseline());
            if (r.startedAt() != null) {
                b.setStartedAt(timestamp(r.startedAt()));
            }
            if (r.completedAt() != null) {
                b.setCompletedAt(timestamp(r.completedAt()));
            }
            if (r.resultDatasetId() != null) {
                b.setResultDatasetId(r.resultDatasetId());
            }
            if (r.resultRevisionId() != null) {
                b.setResultDatasetRevisionId(r.resultRevisionId());
            }
            if (r.errorMessage() != null) {
                b.setErrorMessage(r.errorMessage());
            }
            return b.build();
        } catch (InvalidProtocolBufferException ex) {
            throw new IllegalStateException("the stored run " + r.id() + " is unreadable", ex);
        }
    }

    private EvaluationRecord find(String id) {
        return store.evaluation(environment(), id)
                .orElseThrow(() -> ComputeException.notFound(
                        "there is no evaluation \"" + id + "\" in this environment; ListEvaluations lists them"));
    }

    /**
     * An evaluation's or run's metadata as stored: labels and settings, at most {@value #MAX_METADATA_BYTES} bytes.
     * Every listing parses it again for each row, and a Struct of empty values is about 14 times its size as objects:
     * 100 evaluations with 33 MiB each made one ListEvaluations hold gigabytes.
     */
    private static byte[] metadata(com.google.protobuf.Struct metadata) {
        int size = metadata.getSerializedSize();
        if (size > MAX_METADATA_BYTES) {
            throw ComputeException.invalid("metadata is " + size + " bytes; at most " + MAX_METADATA_BYTES
                    + " are kept: put large data in the dataset or a volume, and name it in metadata");
        }
        return metadata.toByteArray();
    }

    private static String name(String field, String name) {
        String trimmed = name.strip();
        if (trimmed.isEmpty() || trimmed.length() > MAX_NAME) {
            throw ComputeException.invalid(field + " must be 1 to " + MAX_NAME + " characters, got "
                    + (trimmed.isEmpty() ? "none" : trimmed.length()));
        }
        return trimmed;
    }

    private static EvaluationSuite suite(SuiteRecord s) {
        return EvaluationSuite.newBuilder()
                .setId(s.id())
                .setEnvironmentId(s.environment())
                .setName(s.name())
                .setCreatedAt(timestamp(s.createdAt()))
                .build();
    }

    private static Evaluation evaluation(EvaluationRecord e) {
        try {
            Evaluation.Builder b = Evaluation.newBuilder()
                    .setId(e.id())
                    .setEnvironmentId(e.environment())
                    .setName(e.name())
                    .setDatasetId(e.datasetId())
                    .setDatasetRevisionId(e.datasetRevisionId())
                    .setTaskFunctionVersionId(e.taskVersionId())
                    .addAllScorers(EvaluationScorers.parseFrom(e.scorers()).getScorersList())
                    .setMetadata(Struct.parseFrom(e.metadata()))
                    .setCreatedAt(timestamp(e.createdAt()));
            if (e.suiteId() != null) {
                b.setSuiteId(e.suiteId());
            }
            return b.build();
        } catch (InvalidProtocolBufferException ex) {
            throw new IllegalStateException("the stored evaluation " + e.id() + " is unreadable", ex);
        }
    }

    private Instant now() {
        return clock.instant();
    }

    private static String environment() {
        return Caller.current().environment();
    }

    private static Timestamp timestamp(Instant t) {
        return Timestamp.newBuilder()
                .setSeconds(t.getEpochSecond())
                .setNanos(t.getNano())
                .build();
    }
}
