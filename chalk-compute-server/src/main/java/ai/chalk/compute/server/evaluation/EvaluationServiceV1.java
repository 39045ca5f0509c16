package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationResponse;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationSuiteRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationSuiteResponse;
import ai.chalk.compute.proto.evaluation.v1.Evaluation;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorers;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.EvaluationSuite;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationResponse;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationSuitesRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationSuitesResponse;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.EvaluationStore;
import ai.chalk.compute.server.store.EvaluationStore.EvaluationRecord;
import ai.chalk.compute.server.store.EvaluationStore.SuiteRecord;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.Timestamp;
import io.grpc.stub.StreamObserver;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/**
 * {@code chalk.evaluation.v1.EvaluationService}: the evaluation suites and evaluations of the caller's environment
 * ({@link Caller}); another environment's are NOT_FOUND, as ones never created. An evaluation pins at creation what it
 * is given ({@link EvaluationPins}). Runs are not executed by this server yet: their RPCs answer UNIMPLEMENTED.
 */
public final class EvaluationServiceV1 extends EvaluationServiceGrpc.EvaluationServiceImplBase {

    private static final int MAX_NAME = 255;

    private final EvaluationStore store;
    private final EvaluationPins pins;
    private final Clock clock;

    EvaluationServiceV1(EvaluationStore store, EvaluationPins pins, Clock clock) {
        this.store = store;
        this.pins = pins;
        this.clock = clock;
    }

    /**
     * The service over {@code store}, pinning datasets and function versions of the caller's environment.
     *
     * @param secrets a secret's value by environment and name, or null when there is none
     */
    public static EvaluationServiceV1 create(
            EvaluationStore store,
            DatasetManager datasets,
            FunctionStore functions,
            BiFunction<String, String, @Nullable String> secrets) {
        return new EvaluationServiceV1(store, new EvaluationPins(datasets, functions, secrets), Clock.systemUTC());
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
                    request.getMetadata().toByteArray(),
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
            page.stream().limit(limit).forEach(e -> b.addEvaluations(evaluation(e)));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    private EvaluationRecord find(String id) {
        return store.evaluation(environment(), id)
                .orElseThrow(() -> ComputeException.notFound(
                        "there is no evaluation \"" + id + "\" in this environment; ListEvaluations lists them"));
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
