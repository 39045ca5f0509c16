package ai.chalk.compute.evaluation.judge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import ai.chalk.compute.dataset.Dataset;
import ai.chalk.compute.evaluation.Evaluation;
import ai.chalk.compute.evaluation.EvaluationRun;
import ai.chalk.compute.evaluation.EvaluationRunStatus;
import ai.chalk.compute.evaluation.EvaluationScorer;
import ai.chalk.compute.evaluation.ScoreSummary;
import ai.chalk.compute.evaluation.Scorers;
import ai.chalk.compute.function.deploy.DeployedFunction;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.ai.AiRouterOptions;
import ai.chalk.compute.server.egress.EgressWorld;
import ai.chalk.compute.sql.SQLClient;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import com.acme.Replies;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * LLM judges given directly to {@code Evaluation.create}: each deploys as its scorer function ({@code trace-quality},
 * {@code jev}), its replicas on the real server's function workers run the judge, and the evaluation scores with them
 * like any function scorer. The provider is {@link StandInOpenAiServer}, standing in for a hosted LLM, reached through
 * the server's AI router (the server holds the key) or directly with {@code apiKey(Secret)} and {@code baseUrl}.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class JudgeScorerEvaluationTest {

    private static final String ROUTER_KEY = "sk-router-only-5c1d9e7a22f0";
    private static final String DIRECT_KEY = "sk-direct-secret-8e3b6f41d9a7";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Four replies: a good one, a bad one, one whose grade comes back malformed, and one the cheap model doubts. */
    private static final List<Map<String, Object>> ROWS = List.of(
            Map.of("id", 1, "message", "Welcome back, Ada"),
            Map.of("id", 2, "message", "Login failed"),
            Map.of("id", 3, "message", "MALFORMED reply"),
            Map.of("id", 4, "message", "An ambiguous answer"));

    @TempDir
    Path dir;

    private StandInOpenAiServer llm;
    private ListAppender<ILoggingEvent> logs;

    @BeforeEach
    void start() throws Exception {
        logs = new ListAppender<>();
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
        llm = new StandInOpenAiServer();
    }

    @AfterEach
    void noKeyInAnyLog() {
        llm.close();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        for (ILoggingEvent event : logs.list) {
            assertThat(event.getFormattedMessage()).doesNotContain(ROUTER_KEY).doesNotContain(DIRECT_KEY);
            if (event.getThrowableProxy() != null) {
                assertThat(ThrowableProxyUtil.asString(event.getThrowableProxy()))
                        .doesNotContain(ROUTER_KEY)
                        .doesNotContain(DIRECT_KEY);
            }
        }
    }

    @Test
    void judgesWithoutAProviderRunOnTheWorkersThroughTheServersAiRouter() throws Exception {
        Path keyFile = Files.writeString(dir.resolve("ai.key"), ROUTER_KEY + "\n");
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dir.resolve("data"))
                        .aiRouter(new AiRouterOptions(URI.create(llm.baseUrl()), keyFile))
                        .build()
                        .start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            LlmJudge<LlmJudgeTest.TraceQuality> judge =
                    Scorers.llmJudge(LlmJudgeTest.TraceQuality.class, "grader", "Grade the agent's reply.");
            JevJudge jev = Scorers.jev(labels(), "Y. yes\nN. no", "cheap", "strong", 0.9, List.of("message", "output"));

            Evaluation evaluation = evaluate(client, "Replies", judge, jev);
            assertThat(evaluation.scorers()).extracting(EvaluationScorer::id).containsExactly("trace-quality", "jev");
            EvaluationRun run = evaluation.run().await(Duration.ofMinutes(4));
            checkRun(client, run);
            assertThat(llm.received())
                    .as("the router added its key to every request the workers made")
                    .isNotEmpty()
                    .allSatisfy(r -> assertThat(r.authorization()).isEqualTo("Bearer " + ROUTER_KEY));

            // an unchanged judge is the same function version, even from another evaluation
            Evaluation again = evaluate(client, "Replies again", judge, jev);
            assertThat(again.scorers())
                    .extracting(s -> s.functionVersionId().orElseThrow())
                    .containsExactlyElementsOf(evaluation.scorers().stream()
                            .map(s -> s.functionVersionId().orElseThrow())
                            .toList());
            // a changed one is a new version of the same function
            Evaluation changed =
                    evaluate(client, "Replies changed", judge.completionOptions(Map.of("temperature", 0)), jev);
            assertThat(changed.scorers().get(0).functionVersionId())
                    .isNotEqualTo(evaluation.scorers().get(0).functionVersionId());
            assertThat(client.functions().versions("trace-quality")).hasSize(2);
        }
    }

    @Test
    void judgesWithAnApiKeySecretGetTheKeyWhereTheyRunAndMayReachOnlyTheirProvider() throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dir.resolve("data"))
                        .build()
                        .start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            client.secrets().upsert("OPENAI_KEY", DIRECT_KEY);
            EvaluationRun run = evaluateWithKey(client, llm.baseUrl()).run().await(Duration.ofMinutes(4));

            // the replicas run isolated: their policy lets them out to the provider's address alone, and no sandbox
            // may reach the server host's loopback, where this test's stand-in listens (127.0.0.1 in a replica is its
            // own loopback). So every row fails to connect, after the judge read its key from the secret (without it
            // the row would fail saying the secret is not in the replica's environment)
            assertThat(run.status()).as(run.toString()).isEqualTo(EvaluationRunStatus.SUCCEEDED);
            List<String> errors = new java.util.ArrayList<>();
            try (SQLClient sql = SQLClient.forChannel(client.channel())) {
                for (Map<String, Object> row : sql.query(
                                "SELECT error FROM " + run.resultTable().orElseThrow())
                        .rows()) {
                    errors.add(String.valueOf(row.get("error")));
                }
            }
            assertThat(errors)
                    .hasSize(4)
                    .allSatisfy(error -> assertThat(error)
                            .contains("trace-quality: ", "jev: ", "could not be reached")
                            .doesNotContain("is not in this process's environment")
                            .doesNotContain(DIRECT_KEY));
            assertThat(llm.received()).isEmpty();
            // the key is the deployment's secret, never in the function's configuration
            assertThat(client.functions().current("trace-quality").toString()).doesNotContain(DIRECT_KEY);
        }
    }

    @Test
    void judgesWithAnApiKeySecretGradeThroughTheirProviderOnANetworkBeyondTheHost() throws Exception {
        // the provider as sandboxes meet one: a server of a network the test builds (EgressWorld), reached by routing;
        // its answers come from the stand-in, which listens on the host's end of that network behind the world's relay
        try (EgressWorld world = EgressWorld.start();
                StandInOpenAiServer provider = new StandInOpenAiServer(world.hostEnd)) {
            int port = world.relay(8181, provider.port());
            String baseUrl = "http://" + world.farA.getHostAddress() + ":" + port + "/v1";
            try (ComputeServer server = ComputeServer.builder()
                            .dataDir(dir.resolve("data"))
                            .egress(world.options())
                            .build()
                            .start();
                    SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
                client.secrets().upsert("OPENAI_KEY", DIRECT_KEY);
                EvaluationRun run = evaluateWithKey(client, baseUrl).run().await(Duration.ofMinutes(4));

                checkRun(client, run);
                assertThat(provider.received())
                        .as("every request came from a replica holding the secret's value")
                        .isNotEmpty()
                        .allSatisfy(r -> assertThat(r.authorization()).isEqualTo("Bearer " + DIRECT_KEY));
                assertThat(client.functions().current("jev").toString()).doesNotContain(DIRECT_KEY);
            }
        }
    }

    @Test
    void aJudgeWithAPromptFunctionIsRefusedSayingWhatToDoInstead() throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dir.resolve("data"))
                        .build()
                        .start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            Dataset replies = client.datasets().upload("replies", ROWS);
            DeployedFunction task = client.functions().deploy(Replies.class).get(0);
            LlmJudge<LlmJudgeTest.TraceQuality> judge = Scorers.llmJudge(
                            LlmJudgeTest.TraceQuality.class, "grader", "Grade it.")
                    .prompt(row -> "Reply: " + row.get("output"));
            assertThatThrownBy(
                            () -> client.evaluations().create("Replies", replies, task, List.of(judge), null, Map.of()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("scorers[0]: the judge trace-quality has a prompt function")
                    .hasMessageContaining("@ChalkScorer");
        }
    }

    private static Map<String, Double> labels() {
        Map<String, Double> labels = new LinkedHashMap<>();
        labels.put("Y", 1.0);
        labels.put("N", 0.0);
        return labels;
    }

    /** Both judges calling {@code baseUrl} themselves with the key of the secret {@code OPENAI_KEY}. */
    private static Evaluation evaluateWithKey(SandboxClient client, String baseUrl) {
        LlmJudge<LlmJudgeTest.TraceQuality> judge = Scorers.llmJudge(
                        LlmJudgeTest.TraceQuality.class, "grader", "Grade the agent's reply.")
                .apiKey(Secret.fromChalkEnv("OPENAI_KEY"))
                .baseUrl(baseUrl);
        JevJudge jev = Scorers.jev(labels(), "Y. yes\nN. no", "cheap", "strong", 0.9, List.of("message", "output"))
                .apiKey(Secret.fromChalkEnv("OPENAI_KEY"))
                .baseUrl(baseUrl);
        return evaluate(client, "Replies", judge, jev);
    }

    private static Evaluation evaluate(SandboxClient client, String name, Object judge, Object jev) {
        Dataset replies = client.datasets().upload("replies", ROWS);
        DeployedFunction task = client.functions().deploy(Replies.class).get(0);
        return client.evaluations().create(name, replies, task, List.of(judge, jev), null, Map.of());
    }

    private static void checkRun(SandboxClient client, EvaluationRun run) throws Exception {
        assertThat(run.status()).as(run.toString()).isEqualTo(EvaluationRunStatus.SUCCEEDED);
        Map<Integer, Map<String, Object>> rows = new TreeMap<>();
        try (SQLClient sql = SQLClient.forChannel(client.channel())) {
            for (Map<String, Object> row : sql.query("SELECT id, \"trace-quality_score\" AS tq,"
                            + " \"trace-quality_metadata\" AS tq_meta, jev_score, jev_metadata, error FROM "
                            + run.resultTable().orElseThrow())
                    .rows()) {
                rows.put(((Number) row.get("id")).intValue(), new LinkedHashMap<>(row));
            }
        }
        ScoreSummary summary = run.scoreSummary().orElseThrow();
        // trace-quality: Welcome 1, Login failed 0, MALFORMED fails (a failed cell counts 0 in the summary), ambiguous
        // 0
        assertThat(summary.scorer("trace-quality").averageScore().getAsDouble())
                .as(rows.toString())
                .isCloseTo(0.25, within(1e-9));
        // jev: the cheap model says Y (0.97) for three rows; the ambiguous one (0.6) escalates to strong, which says N
        assertThat(summary.scorer("jev").averageScore().getAsDouble()).isCloseTo(0.75, within(1e-9));
        assertThat(summary.format()).contains("trace-quality", "jev");

        assertThat(rows).hasSize(4);
        assertThat(((Number) rows.get(1).get("tq")).doubleValue()).isEqualTo(1.0);
        JsonNode good = JSON.readTree((String) rows.get(1).get("tq_meta"));
        assertThat(good.path("directness").asInt()).isEqualTo(2);
        assertThat(good.path("task_correctness").isMissingNode()
                        && good.path("taskCorrectness").isMissingNode())
                .as("the other components are row metadata: " + good)
                .isFalse();
        assertThat(good.has("reason")).isTrue();
        assertThat(rows.get(1).get("error")).isNull();
        assertThat(((Number) rows.get(2).get("tq")).doubleValue()).isEqualTo(0.0);

        // the malformed grade fails that row's judge only: the JEV judge scored it, the other rows are whole
        assertThat(rows.get(3).get("tq")).isNull();
        assertThat((String) rows.get(3).get("error"))
                .contains("trace-quality")
                .contains("malformed TraceQuality grade");
        assertThat(((Number) rows.get(3).get("jev_score")).doubleValue()).isEqualTo(1.0);

        JsonNode sure = JSON.readTree((String) rows.get(1).get("jev_metadata"));
        assertThat(sure.path("label").asText()).isEqualTo("Y");
        assertThat(sure.path("escalated").asBoolean()).isFalse();
        assertThat(sure.path("judge_model").asText()).isEqualTo("cheap");
        assertThat(sure.path("confidence").asDouble()).isCloseTo(0.97, within(1e-6));
        JsonNode doubted = JSON.readTree((String) rows.get(4).get("jev_metadata"));
        assertThat(((Number) rows.get(4).get("jev_score")).doubleValue()).isEqualTo(0.0);
        assertThat(doubted.path("label").asText()).isEqualTo("N");
        assertThat(doubted.path("escalated").asBoolean()).isTrue();
        assertThat(doubted.path("judge_model").asText()).isEqualTo("strong");
        assertThat(doubted.path("primary_confidence").asDouble()).isCloseTo(0.6, within(1e-6));
        assertThat(doubted.path("confidence").asDouble()).isCloseTo(0.99, within(1e-6));
    }
}
