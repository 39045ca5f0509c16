package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.arrow.v1.ArrowType;
import ai.chalk.compute.proto.arrow.v1.EmptyMessage;
import ai.chalk.compute.proto.arrow.v1.Field;
import ai.chalk.compute.proto.arrow.v1.Schema;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.evaluation.v1.BuiltinScorer;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationSuiteRequest;
import ai.chalk.compute.proto.evaluation.v1.Evaluation;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc.EvaluationServiceBlockingStub;
import ai.chalk.compute.proto.evaluation.v1.FunctionScorer;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationSuitesRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.server.v1.DatasetMeta;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc.DatasetMetadataServiceBlockingStub;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisResponse;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.function.TestCode;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code EvaluationService} over TCP against a real server: datasets uploaded through signed links, task and scorer
 * functions deployed as real versions from uploaded code, evaluations pinning them, refusals of what could never run,
 * environment isolation and a restart.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EvaluationServiceTest {

    private static final String FUNCTIONS = "echo=t.W#echo";

    @TempDir
    static Path dir;

    @TempDir
    static Path files;

    private RunningServer server;
    private TestCode code;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() throws Exception {
        server = RunningServer.start(dir.resolve("shared"));
        code = new TestCode("evaluations");
        code.upload(server.channel);
    }

    @AfterAll
    void stop() {
        server.channel.shutdownNow();
        server.server.close();
    }

    @Test
    void createPinsTheLatestRevisionVersionsAndScorers() throws Exception {
        DatasetMeta prices =
                upload(server.channel, "qa", "question,expected\nwhat is 2+2,4\ncapital of France,Paris\n");
        String task = deploy(server.channel, "answer", "question");
        String scorer = deploy(server.channel, "judge", "output", "expected", "trace");
        EvaluationServiceBlockingStub api = api(server.channel);
        String suite = api.createEvaluationSuite(CreateEvaluationSuiteRequest.newBuilder()
                        .setName("nightly")
                        .build())
                .getSuite()
                .getId();

        Evaluation created = api.createEvaluation(CreateEvaluationRequest.newBuilder()
                        .setName("qa-eval")
                        .setDatasetName("qa")
                        .setTaskFunctionVersionId(task)
                        .addScorers(builtin("exact_match:{\"case_insensitive\":true}"))
                        .addScorers(builtin("levenshtein"))
                        .addScorers(builtin("levenshtein"))
                        .addScorers(function(scorer))
                        .setMetadata(Struct.newBuilder()
                                .putFields(
                                        "owner",
                                        Value.newBuilder().setStringValue("ml").build()))
                        .setSuiteId(suite)
                        .build())
                .getEvaluation();

        assertThat(created.getId()).startsWith("eval-");
        assertThat(created.getDatasetId()).isEqualTo(prices.getId());
        assertThat(created.getDatasetRevisionId()).isEqualTo(latestRevision(prices));
        assertThat(created.getTaskFunctionVersionId()).isEqualTo(task);
        assertThat(created.getSuiteId()).isEqualTo(suite);
        assertThat(created.getMetadata().getFieldsOrThrow("owner").getStringValue())
                .isEqualTo("ml");
        assertThat(created.getScorersList())
                .extracting(EvaluationScorer::getId)
                .containsExactly("exact_match", "levenshtein", "levenshtein-2", "judge");
        assertThat(created.getScorers(0).getSpec().getBuiltin().getId())
                .isEqualTo("exact_match:{\"case_insensitive\":true}");
        assertThat(created.getScorers(3).getSpec().getFunction().getFunctionVersionId())
                .isEqualTo(scorer);

        // a later upload and a later version do not change what the evaluation runs
        DatasetMeta newer = upload(server.channel, "qa", "question,expected\nq,a\n");
        deploy(server.channel, "answer", "question", "expected");
        Evaluation again = api.getEvaluation(GetEvaluationRequest.newBuilder()
                        .setEvaluationId(created.getId())
                        .build())
                .getEvaluation();
        assertThat(latestRevision(newer)).isNotEqualTo(created.getDatasetRevisionId());
        assertThat(again).isEqualTo(created);

        assertThat(api.listEvaluationSuites(ListEvaluationSuitesRequest.getDefaultInstance())
                        .getSuitesList())
                .anyMatch(s -> s.getId().equals(suite) && s.getName().equals("nightly"));
        assertThat(api.listEvaluations(ListEvaluationsRequest.newBuilder()
                                .setSuiteId(suite)
                                .build())
                        .getEvaluationsList())
                .containsExactly(created);
        assertThat(api.listEvaluations(ListEvaluationsRequest.newBuilder()
                                .setSuiteId("evs-none")
                                .build())
                        .getEvaluationsList())
                .isEmpty();
    }

    @Test
    void listsPageByCursor() throws Exception {
        upload(server.channel, "pages", "question,expected\na,b\n");
        String task = deploy(server.channel, "pager", "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        String suite = api.createEvaluationSuite(CreateEvaluationSuiteRequest.newBuilder()
                        .setName("paged")
                        .build())
                .getSuite()
                .getId();
        for (int i = 0; i < 3; i++) {
            api.createEvaluation(request("pages", task, builtin("json_valid")).toBuilder()
                    .setName("page-" + i)
                    .setSuiteId(suite)
                    .build());
        }
        ListEvaluationsResponse first = api.listEvaluations(ListEvaluationsRequest.newBuilder()
                .setSuiteId(suite)
                .setLimit(2)
                .build());
        ListEvaluationsResponse second = api.listEvaluations(ListEvaluationsRequest.newBuilder()
                .setSuiteId(suite)
                .setLimit(2)
                .setCursor(first.getNextCursor())
                .build());
        assertThat(first.getEvaluationsList()).extracting(Evaluation::getName).containsExactly("page-0", "page-1");
        assertThat(second.getEvaluationsList()).extracting(Evaluation::getName).containsExactly("page-2");
        assertThat(second.hasNextCursor()).isFalse();
    }

    @Test
    void refusesWhatCouldNeverRunNamingTheProblem() throws Exception {
        upload(server.channel, "binding", "question,expected\nq,a\n");
        String good = deploy(server.channel, "binder", "question");
        String prompt = deploy(server.channel, "prompted", "prompt");
        String reference = deploy(server.channel, "referee", "output", "reference");
        EvaluationServiceBlockingStub api = api(server.channel);

        refused(
                () -> api.createEvaluation(request("binding", prompt, builtin("exact_match"))),
                Status.Code.INVALID_ARGUMENT,
                "the task function prompted has parameter 'prompt', which binds to no dataset column;"
                        + " the dataset's columns are [question, expected]");
        refused(
                () -> api.createEvaluation(request("binding", good, function(reference))),
                Status.Code.INVALID_ARGUMENT,
                "scorers[0] (the scorer function referee) has parameter 'reference', which binds to no dataset"
                        + " column; the dataset's columns are [question, expected] (a scorer may also take output"
                        + " and trace)");
        refused(
                () -> api.createEvaluation(request("binding", good, builtin("exact_match:{\"bogus\":1}"))),
                Status.Code.INVALID_ARGUMENT,
                "scorers[0] (builtin \"exact_match:{\"bogus\":1}\"): exact_match has no option bogus");
        refused(
                () -> api.createEvaluation(request("binding", good, builtin("nope"))),
                Status.Code.INVALID_ARGUMENT,
                "there is no built-in scorer nope; the built-ins are exact_match, levenshtein");
        refused(
                () -> api.createEvaluation(
                        request("binding", good, builtin("levenshtein:{\"inputs\":[\"output\",\"answer\"]}"))),
                Status.Code.INVALID_ARGUMENT,
                "scorers[0] (builtin levenshtein) reads column 'answer', which the dataset does not have;"
                        + " its columns are [question, expected]");
        refused(
                () -> api.createEvaluation(request("binding", good)),
                Status.Code.INVALID_ARGUMENT,
                "an evaluation needs at least one scorer");
        refused(
                () -> api.createEvaluation(request("missing", good, builtin("exact_match"))),
                Status.Code.NOT_FOUND,
                "dataset missing does not exist");
        refused(
                () -> api.createEvaluation(request("binding", "fv-none", builtin("exact_match"))),
                Status.Code.NOT_FOUND,
                "task_function_version_id: there is no function version \"fv-none\" in this environment");
        refused(
                () -> api.createEvaluation(request("binding", good, builtin("exact_match")).toBuilder()
                        .setName(" ")
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "name must be 1 to 255 characters");
        // every listing parses each row's metadata again: 33 MiB of it per evaluation made one list hold gigabytes
        Struct.Builder large = Struct.newBuilder();
        for (int i = 0; i < 20_000; i++) {
            large.putFields("k" + i, Value.getDefaultInstance());
        }
        refused(
                () -> api.createEvaluation(request("binding", good, builtin("exact_match")).toBuilder()
                        .setMetadata(large)
                        .build()),
                Status.Code.INVALID_ARGUMENT,
                "bytes; at most 65536 are kept");
        refused(
                () -> api.getEvaluation(GetEvaluationRequest.newBuilder()
                        .setEvaluationId("eval-none")
                        .build()),
                Status.Code.NOT_FOUND,
                "there is no evaluation \"eval-none\" in this environment");
        // the server keeps serving after the refusals
        assertThat(api.createEvaluation(request("binding", good, builtin("exact_match")))
                        .getEvaluation()
                        .getId())
                .startsWith("eval-");
    }

    @Test
    void anotherEnvironmentSeesNothingAndCannotPinOurs() throws Exception {
        upload(server.channel, "private", "question,expected\nq,a\n");
        String task = deploy(server.channel, "secretive", "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        String suite = api.createEvaluationSuite(CreateEvaluationSuiteRequest.newBuilder()
                        .setName("ours")
                        .build())
                .getSuite()
                .getId();
        Evaluation ours = api.createEvaluation(request("private", task, builtin("exact_match")).toBuilder()
                        .setSuiteId(suite)
                        .build())
                .getEvaluation();

        ManagedChannel other = RunningServer.authenticated(server.server, "other-env");
        try {
            EvaluationServiceBlockingStub theirs = api(other);
            refused(
                    () -> theirs.getEvaluation(GetEvaluationRequest.newBuilder()
                            .setEvaluationId(ours.getId())
                            .build()),
                    Status.Code.NOT_FOUND,
                    "there is no evaluation \"" + ours.getId() + "\" in this environment");
            assertThat(theirs.listEvaluations(ListEvaluationsRequest.getDefaultInstance())
                            .getEvaluationsList())
                    .isEmpty();
            assertThat(theirs.listEvaluationSuites(ListEvaluationSuitesRequest.getDefaultInstance())
                            .getSuitesList())
                    .isEmpty();
            upload(other, "theirs", "question,expected\nq,a\n");
            refused(
                    () -> theirs.createEvaluation(request("private", task, builtin("exact_match"))),
                    Status.Code.NOT_FOUND,
                    "dataset private does not exist");
            refused(
                    () -> theirs.createEvaluation(request("theirs", task, builtin("exact_match"))),
                    Status.Code.NOT_FOUND,
                    "there is no function version \"" + task + "\" in this environment");
            refused(
                    () -> theirs.createEvaluation(request("theirs", task, builtin("exact_match")).toBuilder()
                            .setSuiteId(suite)
                            .build()),
                    Status.Code.NOT_FOUND,
                    "there is no evaluation suite \"" + suite + "\" in this environment");
        } finally {
            other.shutdownNow();
        }
    }

    @Test
    void evaluationsSurviveARestart() throws Exception {
        Path data = dir.resolve("restart");
        Evaluation created;
        String suite;
        try (RunningServer first = RunningServer.start(data)) {
            code.upload(first.channel);
            upload(first.channel, "kept", "question,expected\nq,a\n");
            String task = deploy(first.channel, "keeper", "question");
            suite = api(first.channel)
                    .createEvaluationSuite(CreateEvaluationSuiteRequest.newBuilder()
                            .setName("kept")
                            .build())
                    .getSuite()
                    .getId();
            created = api(first.channel)
                    .createEvaluation(request("kept", task, builtin("exact_match")).toBuilder()
                            .setSuiteId(suite)
                            .build())
                    .getEvaluation();
        }
        try (RunningServer second = RunningServer.start(data)) {
            EvaluationServiceBlockingStub api = api(second.channel);
            assertThat(api.getEvaluation(GetEvaluationRequest.newBuilder()
                                    .setEvaluationId(created.getId())
                                    .build())
                            .getEvaluation())
                    .isEqualTo(created);
            assertThat(api.listEvaluationSuites(ListEvaluationSuitesRequest.getDefaultInstance())
                            .getSuitesList())
                    .extracting(s -> s.getId())
                    .containsExactly(suite);
        }
    }

    // -------------------------------------------------------------------------------------------------------------

    private static EvaluationServiceBlockingStub api(Channel channel) {
        return EvaluationServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static CreateEvaluationRequest request(String dataset, String task, EvaluationScorerSpec... scorers) {
        return CreateEvaluationRequest.newBuilder()
                .setName("eval-of-" + dataset)
                .setDatasetName(dataset)
                .setTaskFunctionVersionId(task)
                .addAllScorers(List.of(scorers))
                .build();
    }

    private static EvaluationScorerSpec builtin(String id) {
        return EvaluationScorerSpec.newBuilder()
                .setBuiltin(BuiltinScorer.newBuilder().setId(id))
                .build();
    }

    private static EvaluationScorerSpec function(String versionId) {
        return EvaluationScorerSpec.newBuilder()
                .setFunction(FunctionScorer.newBuilder().setFunctionVersionId(versionId))
                .build();
    }

    private static void refused(ThrowingCallable call, Status.Code code, String message) {
        assertThatThrownBy(call).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(code);
            assertThat(e.getStatus().getDescription()).contains(message);
        });
    }

    /** Deploys a version of {@code name} whose parameters (its input schema) are {@code parameters}; its id. */
    private String deploy(Channel channel, String name, String... parameters) {
        Schema.Builder input = Schema.newBuilder();
        for (String p : parameters) {
            input.addColumns(Field.newBuilder()
                    .setName(p)
                    .setArrowType(ArrowType.newBuilder().setLargeUtf8(EmptyMessage.getDefaultInstance()))
                    .setNullable(true));
        }
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(90, TimeUnit.SECONDS)
                .createExternalFunctionVersion(CreateExternalFunctionVersionRequest.newBuilder()
                        .setFunctionName(name)
                        .setInputArrowSchema(input)
                        .setSpec(ScalingGroupSpec.newBuilder()
                                .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                                .setScalingSpec(ScalingSpec.newBuilder()
                                        .setMinReplicas(0)
                                        .setMaxReplicas(1)
                                        .setShutdownDelaySeconds(60)))
                        .setConfig(FunctionConfig.newBuilder()
                                .putOptions("chalk_compute.code", code.manifestDigest)
                                .putOptions("chalk_compute.functions", FUNCTIONS)
                                .putOptions("chalk_compute.worker", "plain"))
                        .build())
                .getExternalFunctionVersion()
                .getId();
    }

    private DatasetMeta upload(Channel channel, String name, String csv) throws Exception {
        DatasetMetadataServiceBlockingStub datasets =
                DatasetMetadataServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
        Path file = Files.writeString(Files.createTempFile(files, name, ".csv"), csv);
        GetDatasetUploadUrisResponse uri = datasets.getDatasetUploadUris(GetDatasetUploadUrisRequest.newBuilder()
                .setContentSize(Files.size(file))
                .build());
        HttpResponse<String> put = http.send(
                HttpRequest.newBuilder(URI.create(uri.getDirect().getSignedUploadUri()))
                        .PUT(HttpRequest.BodyPublishers.ofFile(file))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        return datasets.finalizeDatasetUpload(FinalizeDatasetUploadRequest.newBuilder()
                        .setUploadSessionId(uri.getUploadSessionId())
                        .setDatasetName(name)
                        .build())
                .getDataset();
    }

    private static String latestRevision(DatasetMeta dataset) {
        return dataset.getMostRecentRevision()
                .getMetadata()
                .getStructValue()
                .getFieldsMap()
                .get("revision_id")
                .getStringValue();
    }
}
