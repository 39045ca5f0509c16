package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import ai.chalk.compute.proto.arrow.v1.ArrowType;
import ai.chalk.compute.proto.arrow.v1.EmptyMessage;
import ai.chalk.compute.proto.arrow.v1.Field;
import ai.chalk.compute.proto.arrow.v1.Schema;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.evaluation.v1.ArchiveEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.BuiltinScorer;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRequest;
import ai.chalk.compute.proto.evaluation.v1.CreateEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.EvaluationRun;
import ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerScoreSummary;
import ai.chalk.compute.proto.evaluation.v1.EvaluationScorerSpec;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.EvaluationServiceGrpc.EvaluationServiceBlockingStub;
import ai.chalk.compute.proto.evaluation.v1.FunctionScorer;
import ai.chalk.compute.proto.evaluation.v1.GetEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationRunsRequest;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationRunsResponse;
import ai.chalk.compute.proto.evaluation.v1.ListEvaluationsRequest;
import ai.chalk.compute.proto.evaluation.v1.SetEvaluationRunBaselineRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.protosql.v1.ExecuteSqlQueryRequest;
import ai.chalk.compute.proto.protosql.v1.SqlServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisResponse;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.function.TestCode;
import ai.chalk.compute.server.store.EvaluationRunStore;
import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Evaluation runs against a real server: a CSV dataset uploaded through its signed link, a task and scorer functions
 * deployed from uploaded code and run by real worker processes ({@code ArrowTestFunctions} compute on the Arrow
 * payloads), built-ins scored in the server, the result queried with SQL; a failing row, a task that cannot run,
 * the workflow mode refused, a run canceled by archiving it, and a run a restart interrupted.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EvaluationRunTest {

    /** A list scorer's metadata: each result with its own. */
    private static final String PANEL =
            "{\"results\":[{\"metadata\":{},\"score\":1.0},{\"metadata\":{},\"score\":0.5}]}";

    @TempDir
    static Path dir;

    private RunningServer server;
    private TestCode code;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() throws Exception {
        server = RunningServer.start(dir.resolve("shared"));
        code = new TestCode("evaluation-runs");
        code.upload(server.channel);
    }

    @AfterAll
    void stop() {
        server.channel.shutdownNow();
        server.server.close();
    }

    @Test
    void aRunScoresEveryRowWritesItsResultDatasetAndSummary() throws Exception {
        // the dataset's own "output" column (an old answer) stays in the result as input_output
        upload(
                server.channel,
                "capitals",
                "question,expected,output\nparis,PARIS,old\nrome,Rome,old\nberlin,Bern,old\nplease fail,x,old\n");
        String task = deploy(server.channel, "shout", utf8(), "question");
        String graded = deploy(server.channel, "graded", utf8(), "output", "expected");
        String ratio = deploy(server.channel, "ratio", float64(), "output", "expected");
        String panel = deploy(server.channel, "panel", utf8(), "output");
        EvaluationServiceBlockingStub api = api(server.channel);
        String evaluation = api.createEvaluation(CreateEvaluationRequest.newBuilder()
                        .setName("capitals")
                        .setDatasetName("capitals")
                        .setTaskFunctionVersionId(task)
                        .addScorers(builtin("exact_match"))
                        .addScorers(builtin("levenshtein"))
                        .addScorers(function(graded))
                        .addScorers(function(ratio))
                        .addScorers(function(panel))
                        .build())
                .getEvaluation()
                .getId();

        EvaluationRun created = api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                        .setEvaluationId(evaluation)
                        .setMetadata(Struct.newBuilder()
                                .putFields(
                                        "git_sha",
                                        Value.newBuilder()
                                                .setStringValue("abc123")
                                                .build()))
                        .build())
                .getEvaluationRun();
        assertThat(created.getId()).startsWith("evr-");
        assertThat(created.getStatus())
                .isIn(
                        EvaluationRunStatus.EVALUATION_RUN_STATUS_PENDING,
                        EvaluationRunStatus.EVALUATION_RUN_STATUS_RUNNING);
        EvaluationRun done = awaitEnd(api, created.getId());

        assertThat(done.getStatus())
                .as(done.getErrorMessage())
                .isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_SUCCEEDED);
        assertThat(done.getMetadata().getFieldsOrThrow("git_sha").getStringValue())
                .isEqualTo("abc123");
        assertThat(done.hasStartedAt()).isTrue();
        assertThat(done.hasCompletedAt()).isTrue();
        assertThat(done.getResultDatasetId()).isNotEmpty();
        assertThat(done.getResultDatasetRevisionId()).isNotEmpty();

        ListEvaluationRunsResponse listed = api.listEvaluationRuns(ListEvaluationRunsRequest.newBuilder()
                .setEvaluationId(evaluation)
                .build());
        assertThat(listed.getEvaluationRunsList()).containsExactly(done);
        assertThat(listed.getEvaluationsList()).extracting(e -> e.getId()).containsExactly(evaluation);
        EvaluationScoreSummary summary = listed.getScoreSummaries(0);
        assertThat(summary.getEvaluationRunId()).isEqualTo(done.getId());
        assertThat(summary.getMetricsMap())
                .containsEntry("rows", 4.0)
                .containsEntry("failed_rows", 1.0)
                .containsEntry("scorer_failures", 0.0);
        Map<String, Double> averages = new LinkedHashMap<>();
        for (EvaluationScorerScoreSummary s : summary.getScorerScoresList()) {
            averages.put(s.getScorer().getId(), s.getAverageScore());
        }
        // the failed row scores 0 with every scorer
        assertThat(averages.keySet()).containsExactly("exact_match", "levenshtein", "graded", "ratio", "panel");
        assertThat(averages.get("exact_match")).isCloseTo(0.25, within(1e-9)); // PARIS only
        assertThat(averages.get("levenshtein")).isCloseTo((1 + 0.25 + (1 - 5.0 / 6)) / 4, within(1e-9));
        assertThat(averages.get("graded")).isCloseTo((1 + 1 + 0.25) / 4, within(1e-9));
        assertThat(averages.get("ratio")).isCloseTo((1 + 1 + 4.0 / 6) / 4, within(1e-9));
        assertThat(averages.get("panel")).isCloseTo(0.75 * 3 / 4, within(1e-9));
        assertThat(api.listEvaluations(ListEvaluationsRequest.getDefaultInstance())
                        .getScoreSummariesList())
                .contains(summary);

        List<List<Object>> rows = sql(
                server.channel,
                "SELECT question, expected, output, exact_match_score, levenshtein_metadata, graded_score,"
                        + " graded_metadata, panel_metadata, error, input_output FROM chalk.datasets."
                        + EvaluationRuns.resultName(done.getId()) + " ORDER BY question");
        assertThat(rows).hasSize(4);
        assertThat(rows.get(0))
                .containsExactly(
                        "berlin",
                        "Bern",
                        "BERLIN",
                        0.0,
                        "{\"distance\":5}",
                        0.25,
                        "{\"length\":6}",
                        PANEL,
                        null,
                        "old");
        assertThat(rows.get(1))
                .containsExactly(
                        "paris", "PARIS", "PARIS", 1.0, "{\"distance\":0}", 1.0, "{\"length\":5}", PANEL, null, "old");
        List<Object> failed = rows.get(2);
        assertThat(failed.subList(0, 4)).containsExactly("please fail", "x", null, null);
        assertThat((String) failed.get(8))
                .isEqualTo("task: java.lang.IllegalStateException: cannot shout 'please fail'");
        assertThat(rows.get(3).subList(0, 4)).containsExactly("rome", "Rome", "ROME", 0.0);

        // baseline
        assertThat(api.setEvaluationRunBaseline(SetEvaluationRunBaselineRequest.newBuilder()
                                .setEvaluationRunId(done.getId())
                                .build())
                        .getEvaluationRun()
                        .getIsBaseline())
                .isTrue();
    }

    @Test
    void aLargeRunScoresEveryRowAtThePaceOfDirectCalls() throws Exception {
        int n = 5000;
        upload(server.channel, "large", manyRows(n));
        String task = deploy(server.channel, "shout", utf8(), "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        String evaluation = evaluation(api, "large", task);
        // the same rows as direct calls of the same version: batches of the run's size, as many in flight
        RowPayloads payloads = new RowPayloads(Schema.newBuilder()
                .addColumns(Field.newBuilder()
                        .setName("question")
                        .setArrowType(utf8())
                        .setNullable(true))
                .build());
        List<byte[]> batches = new ArrayList<>();
        for (int from = 0; from < n; from += EvaluationRuns.BATCH_ROWS) {
            List<Object[]> rows = new ArrayList<>();
            for (int i = from; i < Math.min(n, from + EvaluationRuns.BATCH_ROWS); i++) {
                rows.add(new Object[] {"q" + i});
            }
            batches.add(payloads.encode(rows));
        }
        callDirectly(batches.subList(0, 1)); // a replica is up before either is timed

        long start = System.nanoTime();
        EvaluationRun run = awaitEnd(
                api,
                api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                                .setEvaluationId(evaluation)
                                .build())
                        .getEvaluationRun()
                        .getId());
        double runSeconds = (System.nanoTime() - start) / 1e9;
        start = System.nanoTime();
        callDirectly(batches);
        double directSeconds = (System.nanoTime() - start) / 1e9;

        assertThat(run.getStatus())
                .as(run.getErrorMessage())
                .isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_SUCCEEDED);
        EvaluationScoreSummary summary = api.listEvaluationRuns(ListEvaluationRunsRequest.newBuilder()
                        .setEvaluationId(evaluation)
                        .build())
                .getScoreSummaries(0);
        assertThat(summary.getMetricsMap()).containsEntry("rows", (double) n).containsEntry("failed_rows", 0.0);
        assertThat(summary.getAverageScore()).isEqualTo(1.0); // shout("q7") is "Q7", the expected answer
        System.out.printf(
                "Evaluation run of %d rows (shout + exact_match): %.0f rows/s end to end (result written and"
                        + " summarized); direct calls of the same batches: %.0f rows/s; ratio %.2f%n",
                n, n / runSeconds, n / directSeconds, directSeconds / runSeconds);
    }

    /** Calls {@code shout} with each payload through {@code CallExternalFunction}, as many at a time as a run does. */
    private void callDirectly(List<byte[]> batches) throws Exception {
        var stub = ExternalFunctionCatalogServiceGrpc.newBlockingStub(server.channel);
        java.util.concurrent.ExecutorService pool =
                java.util.concurrent.Executors.newFixedThreadPool(EvaluationRuns.PARALLEL_BATCHES);
        try {
            List<java.util.concurrent.Future<?>> calls = new ArrayList<>();
            for (byte[] b : batches) {
                calls.add(pool.submit(() -> stub.withDeadlineAfter(60, TimeUnit.SECONDS)
                        .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                                .setFunction(
                                        ExternalFunctionVersionKey.newBuilder().setFunctionName("shout"))
                                .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                        .setName("shout")
                                        .setFeatherStream(ByteString.copyFrom(b)))
                                .build())));
            }
            for (var c : calls) {
                c.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theWorkflowModeIsRefusedForLackOfAnOrchestrator() throws Exception {
        upload(server.channel, "modes", "question,expected\na,A\n");
        String task = deploy(server.channel, "shout", utf8(), "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        String evaluation = evaluation(api, "modes", task);
        assertThatThrownBy(() -> api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                        .setEvaluationId(evaluation)
                        .setMetadata(Struct.newBuilder()
                                .putFields(
                                        "execution_mode",
                                        Value.newBuilder()
                                                .setStringValue("workflow")
                                                .build()))
                        .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                    assertThat(e.getStatus().getDescription())
                            .contains("this environment has no workflow orchestrator");
                });
        assertThat(api.listEvaluationRuns(ListEvaluationRunsRequest.newBuilder()
                                .setEvaluationId(evaluation)
                                .build())
                        .getEvaluationRunsList())
                .isEmpty();
        assertThatThrownBy(() -> api.getEvaluationRun(GetEvaluationRunRequest.newBuilder()
                        .setEvaluationRunId("evr-none")
                        .build()))
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
    }

    @Test
    void aTaskThatCannotRunFailsTheRunSayingWhy() throws Exception {
        upload(server.channel, "ghostly", "question,expected\na,A\n");
        // the version's code serves "other", not "ghost": no call of it can run
        String task = deployServing(server.channel, "ghost", utf8(), "other=t.W#other", "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        EvaluationRun run = runToEnd(api, evaluation(api, "ghostly", task));
        assertThat(run.getStatus()).isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_FAILED);
        assertThat(run.getErrorMessage())
                .contains("the task function ghost cannot run: NOT_FOUND")
                .contains("serves no function \"ghost\"");
        assertThat(run.hasResultDatasetId()).isFalse();
    }

    @Test
    void archivingAnOpenRunCancelsIt() throws Exception {
        upload(server.channel, "many", manyRows(2000));
        String task = deploy(server.channel, "dawdle", utf8(), "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        String id = api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                        .setEvaluationId(evaluation(api, "many", task))
                        .build())
                .getEvaluationRun()
                .getId();
        api.archiveEvaluationRun(
                ArchiveEvaluationRunRequest.newBuilder().setEvaluationRunId(id).build());
        EvaluationRun canceled = run(api, id);
        assertThat(canceled.getStatus()).isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_CANCELED);
        assertThat(canceled.getErrorMessage()).startsWith("canceled: the run was archived while it was");
        Thread.sleep(2000); // the batches in flight end; nothing revives the run
        assertThat(run(api, id).getStatus()).isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_CANCELED);
        assertThat(run(api, id).hasResultDatasetId()).isFalse();
    }

    /**
     * A run holds a server thread from its start to its verdict (and more while its batches wait): a tenant creating
     * runs of a slow task had the server hold threads for each, without bound. An environment now has at most half of
     * the server's {@value EvaluationRuns#MAX_UNDER_WAY} runs under way; past that, RESOURCE_EXHAUSTED, and a run that
     * ends makes room.
     */
    @Test
    void runsUnderWayAreBoundedPerEnvironment() throws Exception {
        upload(server.channel, "crowd", manyRows(2000));
        String task = deploy(server.channel, "dawdle", utf8(), "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        String evaluation = evaluation(api, "crowd", task);
        List<String> started = new ArrayList<>();
        try {
            for (int i = 0; i < EvaluationRuns.MAX_UNDER_WAY / 2; i++) {
                started.add(create(api, evaluation));
            }
            assertThatThrownBy(() -> create(api, evaluation))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                        assertThat(e.getStatus().getDescription())
                                .contains("this environment has 16 evaluation runs under way");
                    });
            api.archiveEvaluationRun(ArchiveEvaluationRunRequest.newBuilder()
                    .setEvaluationRunId(started.get(0))
                    .build());
            // once the canceled run's batches in flight end, its place is free
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .ignoreExceptions()
                    .until(() -> started.add(create(api, evaluation)));

            // one place left: a run whose verdict the client has seen has given it back, so the next one starts
            upload(server.channel, "one", manyRows(1));
            String quick = evaluation(api, "one", task);
            api.archiveEvaluationRun(ArchiveEvaluationRunRequest.newBuilder()
                    .setEvaluationRunId(started.remove(0))
                    .build());
            String last = Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .ignoreExceptions()
                    .until(() -> create(api, quick), id -> id != null);
            for (int i = 0; i < 3; i++) {
                assertThat(awaitEnd(api, last).getStatus())
                        .isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_SUCCEEDED);
                last = create(api, quick);
            }
            started.add(last);
        } finally {
            for (String id : started) {
                api.archiveEvaluationRun(ArchiveEvaluationRunRequest.newBuilder()
                        .setEvaluationRunId(id)
                        .build());
            }
            // the next test of this server finds room: the archived runs' places come back as their batches end
            Awaitility.await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> {
                api.archiveEvaluationRun(ArchiveEvaluationRunRequest.newBuilder()
                        .setEvaluationRunId(create(api, evaluation))
                        .build());
                return true;
            });
        }
    }

    private static String create(EvaluationServiceBlockingStub api, String evaluation) {
        return api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                        .setEvaluationId(evaluation)
                        .build())
                .getEvaluationRun()
                .getId();
    }

    @Test
    void aRunUnderWayShowsItsRowsDoneInTheSummaryItsListGives() throws Exception {
        int n = 20 * EvaluationRuns.BATCH_ROWS; // 20 batches of 300 ms, 4 at a time: over a second of progress
        upload(server.channel, "progress", manyRows(n));
        String task = deploy(server.channel, "dawdle", utf8(), "question");
        EvaluationServiceBlockingStub api = api(server.channel);
        String evaluation = evaluation(api, "progress", task);
        String id = api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                        .setEvaluationId(evaluation)
                        .build())
                .getEvaluationRun()
                .getId();
        List<Double> seen = new ArrayList<>();
        Awaitility.await()
                .atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    ListEvaluationRunsResponse listed = api.listEvaluationRuns(ListEvaluationRunsRequest.newBuilder()
                            .setEvaluationId(evaluation)
                            .build());
                    EvaluationRun r = listed.getEvaluationRuns(0);
                    if (r.getStatus() == EvaluationRunStatus.EVALUATION_RUN_STATUS_RUNNING
                            && listed.getScoreSummariesCount() == 1) {
                        EvaluationScoreSummary progress = listed.getScoreSummaries(0);
                        assertThat(progress.getEvaluationRunId()).isEqualTo(id);
                        assertThat(progress.getMetricsMap()).containsEntry("rows", (double) n);
                        assertThat(progress.getScorerScoresList()).isEmpty(); // no scores before the end
                        seen.add(progress.getMetricsOrThrow("rows_done"));
                    }
                    return r.getStatus() == EvaluationRunStatus.EVALUATION_RUN_STATUS_SUCCEEDED;
                });
        // batches finish one after another: the count rose while the run went on, and never past the rows
        assertThat(seen).isSortedAccordingTo(Double::compare);
        assertThat(seen).anyMatch(d -> d > 0 && d < n);
        assertThat(api.listEvaluationRuns(ListEvaluationRunsRequest.newBuilder()
                                .setEvaluationId(evaluation)
                                .build())
                        .getScoreSummaries(0)
                        .getMetricsMap())
                .containsEntry("rows", (double) n)
                .containsEntry("rows_done", (double) n);
    }

    @Test
    void aRunARestartInterruptedFailsSayingSo() throws Exception {
        Path data = dir.resolve("restart");
        String id;
        try (RunningServer first = RunningServer.start(data)) {
            code.upload(first.channel);
            upload(first.channel, "slow", manyRows(2000));
            String task = deploy(first.channel, "dawdle", utf8(), "question");
            EvaluationServiceBlockingStub api = api(first.channel);
            id = api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                            .setEvaluationId(evaluation(api, "slow", task))
                            .build())
                    .getEvaluationRun()
                    .getId();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> run(api, id).getStatus() == EvaluationRunStatus.EVALUATION_RUN_STATUS_RUNNING);
        }
        try (RunningServer second = RunningServer.start(data)) {
            EvaluationRun run = run(api(second.channel), id);
            assertThat(run.getStatus()).isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_FAILED);
            assertThat(run.getErrorMessage()).isEqualTo(EvaluationRunStore.INTERRUPTED);
        }
    }

    // -------------------------------------------------------------------------------------------------------------

    @Test
    void aRunThatWouldHoldMoreThanTheServerAllowsFailsSayingSoAndTheNextRunsGoOn() throws Exception {
        // a tenant chooses its dataset's size and what its task answers: neither may exhaust the server's heap
        // 6 MiB for all runs: 3 MiB for one environment's
        try (RunningServer small = RunningServer.start(dir.resolve("memory"), b -> b.evaluationRunsBudget(6L << 20))) {
            code.upload(small.channel);
            EvaluationServiceBlockingStub api = api(small.channel);
            String task = deploy(small.channel, "shout", utf8(), "question");
            // about 2.3 MB of rows read, then as much again of answers (each row's question shouted back)
            upload(small.channel, "long_answers", longRows(1000, 1000));
            // about 4.5 MB of rows: the reading stops there
            upload(small.channel, "long_rows", longRows(2000, 1000));
            upload(small.channel, "short_rows", manyRows(50));

            for (String dataset : List.of("long_answers", "long_rows")) {
                EvaluationRun failed = runToEnd(api, evaluation(api, dataset, task));

                assertThat(failed.getStatus()).as(dataset).isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_FAILED);
                assertThat(failed.getErrorMessage())
                        .as(dataset)
                        .startsWith("the run needs more of the server's memory than evaluation runs may hold (the runs"
                                + " of one environment may hold 3.0 MiB at once, half of what all evaluation runs share,"
                                + " and this environment's hold")
                        .endsWith("or give the server a larger heap");
            }
            // what the failed runs held was given back: a run that fits succeeds on the same server
            EvaluationRun done = runToEnd(api, evaluation(api, "short_rows", task));
            assertThat(done.getStatus())
                    .as(done.getErrorMessage())
                    .isEqualTo(EvaluationRunStatus.EVALUATION_RUN_STATUS_SUCCEEDED);
        }
    }

    /** {@code n} rows whose question is {@code length} characters long (and unique), expected the same shouted. */
    private static String longRows(int n, int length) {
        String padding = "x".repeat(length);
        StringBuilder csv = new StringBuilder("question,expected\n");
        for (int i = 0; i < n; i++) {
            csv.append("q").append(i).append(padding).append(",Q").append(i).append('\n');
        }
        return csv.toString();
    }

    private static String manyRows(int n) {
        StringBuilder csv = new StringBuilder("question,expected\n");
        for (int i = 0; i < n; i++) {
            csv.append("q").append(i).append(",Q").append(i).append('\n');
        }
        return csv.toString();
    }

    private static String evaluation(EvaluationServiceBlockingStub api, String dataset, String task) {
        return api.createEvaluation(CreateEvaluationRequest.newBuilder()
                        .setName("eval-of-" + dataset)
                        .setDatasetName(dataset)
                        .setTaskFunctionVersionId(task)
                        .addScorers(builtin("exact_match"))
                        .build())
                .getEvaluation()
                .getId();
    }

    /** Runs the evaluation once and waits for the run's end. */
    private static EvaluationRun runToEnd(EvaluationServiceBlockingStub api, String evaluationId) {
        return awaitEnd(
                api,
                api.createEvaluationRun(CreateEvaluationRunRequest.newBuilder()
                                .setEvaluationId(evaluationId)
                                .build())
                        .getEvaluationRun()
                        .getId());
    }

    private static EvaluationRun run(EvaluationServiceBlockingStub api, String id) {
        return api.getEvaluationRun(GetEvaluationRunRequest.newBuilder()
                        .setEvaluationRunId(id)
                        .build())
                .getEvaluationRun();
    }

    private static EvaluationRun awaitEnd(EvaluationServiceBlockingStub api, String id) {
        List<EvaluationRunStatus> seen = new ArrayList<>();
        Awaitility.await()
                .atMost(Duration.ofSeconds(180))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> {
                    EvaluationRunStatus s = run(api, id).getStatus();
                    if (seen.isEmpty() || seen.get(seen.size() - 1) != s) {
                        seen.add(s);
                    }
                    return s == EvaluationRunStatus.EVALUATION_RUN_STATUS_SUCCEEDED
                            || s == EvaluationRunStatus.EVALUATION_RUN_STATUS_FAILED
                            || s == EvaluationRunStatus.EVALUATION_RUN_STATUS_CANCELED;
                });
        // statuses only move forward
        List<EvaluationRunStatus> order = List.of(
                EvaluationRunStatus.EVALUATION_RUN_STATUS_PENDING,
                EvaluationRunStatus.EVALUATION_RUN_STATUS_RUNNING,
                EvaluationRunStatus.EVALUATION_RUN_STATUS_FINALIZING);
        for (int i = 1; i < seen.size() - 1; i++) {
            assertThat(order.indexOf(seen.get(i))).isGreaterThan(order.indexOf(seen.get(i - 1)));
        }
        return run(api, id);
    }

    /** A stub whose every call has 60 s (a stub's own deadline would run from its creation, across a long run). */
    private static EvaluationServiceBlockingStub api(Channel channel) {
        return EvaluationServiceGrpc.newBlockingStub(channel).withInterceptors(new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(
                    MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                return next.newCall(method, options.withDeadlineAfter(60, TimeUnit.SECONDS));
            }
        });
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

    private static ArrowType utf8() {
        return ArrowType.newBuilder().setUtf8(EmptyMessage.getDefaultInstance()).build();
    }

    private static ArrowType float64() {
        return ArrowType.newBuilder()
                .setFloat64(EmptyMessage.getDefaultInstance())
                .build();
    }

    private String deploy(Channel channel, String name, ArrowType output, String... parameters) {
        return deployServing(channel, name, output, name + "=t.W#" + name, parameters);
    }

    /** Deploys {@code name} with string parameters, served by the test worker's function of the same name. */
    private String deployServing(
            Channel channel, String name, ArrowType output, String functions, String... parameters) {
        Schema.Builder input = Schema.newBuilder();
        for (String p : parameters) {
            input.addColumns(Field.newBuilder().setName(p).setArrowType(utf8()).setNullable(true));
        }
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(90, TimeUnit.SECONDS)
                .createExternalFunctionVersion(CreateExternalFunctionVersionRequest.newBuilder()
                        .setFunctionName(name)
                        .setInputArrowSchema(input)
                        .setOutputArrowSchema(Schema.newBuilder()
                                .addColumns(Field.newBuilder()
                                        .setName("output")
                                        .setArrowType(output)
                                        .setNullable(true)))
                        .setSpec(ScalingGroupSpec.newBuilder()
                                .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                                .setScalingSpec(ScalingSpec.newBuilder()
                                        .setMinReplicas(0)
                                        .setMaxReplicas(1)
                                        .setShutdownDelaySeconds(60)))
                        .setConfig(FunctionConfig.newBuilder()
                                .putOptions("chalk_compute.code", code.manifestDigest)
                                .putOptions("chalk_compute.functions", functions)
                                .putOptions("chalk_compute.worker", "plain"))
                        .build())
                .getExternalFunctionVersion()
                .getId();
    }

    private void upload(Channel channel, String name, String csv) throws Exception {
        var datasets = DatasetMetadataServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
        Path file = Files.writeString(Files.createTempFile(dir, name, ".csv"), csv);
        GetDatasetUploadUrisResponse uri = datasets.getDatasetUploadUris(GetDatasetUploadUrisRequest.newBuilder()
                .setContentSize(Files.size(file))
                .build());
        HttpResponse<String> put = http.send(
                HttpRequest.newBuilder(URI.create(uri.getDirect().getSignedUploadUri()))
                        .PUT(HttpRequest.BodyPublishers.ofFile(file))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        datasets.finalizeDatasetUpload(FinalizeDatasetUploadRequest.newBuilder()
                .setUploadSessionId(uri.getUploadSessionId())
                .setDatasetName(name)
                .build());
    }

    /** The rows a SQL query answers, read from its Parquet with DuckDB. */
    private static List<List<Object>> sql(Channel channel, String query) throws Exception {
        byte[] parquet = SqlServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .executeSqlQuery(
                        ExecuteSqlQueryRequest.newBuilder().setQuery(query).build())
                .getSyncPayload()
                .getParquetResponse()
                .toByteArray();
        Path file = Files.write(Files.createTempFile(dir, "result", ".parquet"), parquet);
        List<List<Object>> rows = new ArrayList<>();
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                ResultSet rs = c.createStatement().executeQuery("SELECT * FROM '" + file + "'")) {
            while (rs.next()) {
                List<Object> row = new ArrayList<>();
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    row.add(rs.getObject(i));
                }
                rows.add(row);
            }
        }
        return rows;
    }
}
