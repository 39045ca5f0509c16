package ai.chalk.compute.evaluation.judge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.evaluation.Scorers;
import ai.chalk.compute.proto.ai.v1.AiRouterServiceGrpc;
import ai.chalk.compute.proto.ai.v1.ForwardRequest;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.ai.AiRouterOptions;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Judges that name no provider call the server's AI router, which holds the provider key (from
 * {@code --ai-api-key-file}) and adds it to each request; the application never sees the key. The provider is
 * {@link StandInOpenAiServer}, standing in for a hosted LLM.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AiRouterJudgeTest {

    private static final String ROUTER_KEY = "sk-router-only-3b8f0e2c51d4";

    private StandInOpenAiServer llm;
    private ComputeServer routed;
    private ComputeServer plain;
    private SandboxClient client;
    private SandboxClient plainClient;
    private ListAppender<ILoggingEvent> logs;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        logs = new ListAppender<>();
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
        llm = new StandInOpenAiServer();
        Path keyFile = Files.writeString(dir.resolve("ai.key"), ROUTER_KEY + "\n");
        routed = ComputeServer.builder()
                .dataDir(dir.resolve("routed"))
                .aiRouter(new AiRouterOptions(URI.create(llm.baseUrl()), keyFile))
                .build()
                .start();
        plain = ComputeServer.builder().dataDir(dir.resolve("plain")).build().start();
        client = SandboxClient.inProcess(routed.inProcessName());
        plainClient = SandboxClient.inProcess(plain.inProcessName());
    }

    @AfterAll
    void stop() {
        for (AutoCloseable closeable : new AutoCloseable[] {client, plainClient, routed, plain, llm}) {
            try {
                if (closeable != null) {
                    closeable.close();
                }
            } catch (Exception e) {
                // closing the rest matters more
            }
        }
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        for (ILoggingEvent event : logs.list) {
            assertThat(event.getFormattedMessage()).doesNotContain(ROUTER_KEY);
            if (event.getThrowableProxy() != null) {
                assertThat(ThrowableProxyUtil.asString(event.getThrowableProxy()))
                        .doesNotContain(ROUTER_KEY);
            }
        }
    }

    @Test
    void aJudgeWithoutAProviderGradesThroughTheRouterWhichAddsTheKey() {
        EvaluationScorerResult result = Scorers.llmJudge(LlmJudgeTest.TraceQuality.class, "grader", "Grade it.")
                .router(client)
                .score(Map.of("output", "Welcome back"));
        assertThat(result.score()).isEqualTo(1.0);
        assertThat(result.metadata()).containsEntry("directness", 2);
        StandInOpenAiServer.Received received =
                llm.received().get(llm.received().size() - 1);
        assertThat(received.authorization()).isEqualTo("Bearer " + ROUTER_KEY);
        assertThat(received.body()
                        .path("response_format")
                        .path("json_schema")
                        .path("strict")
                        .asBoolean())
                .isTrue();
    }

    @Test
    void jevThroughTheRouterKeepsTheLogProbabilitiesAndRetriesARateLimit() {
        Map<String, Double> labels = new LinkedHashMap<>();
        labels.put("Y", 1.0);
        labels.put("N", 0.0);
        EvaluationScorerResult result = Scorers.jev(labels, "Y. yes\nN. no", "cheap", "strong", 0.9, List.of("output"))
                .router(client)
                .score(Map.of("output", "An ambiguous answer."));
        assertThat(result.metadata()).containsEntry("escalated", true).containsEntry("judge_model", "strong");

        int before = llm.calls("busy");
        EvaluationScorerResult busy = Scorers.llmJudge(LlmJudgeTest.TraceQuality.class, "busy", "Grade it.")
                .router(client)
                .score(Map.of("output", "Welcome"));
        assertThat(busy.score()).isEqualTo(1.0);
        assertThat(llm.calls("busy") - before).isEqualTo(2);
    }

    @Test
    void aProviderErrorThatEchoesTheKeyReachesTheCallerMasked() {
        assertThatThrownBy(() -> Scorers.llmJudge(LlmJudgeTest.TraceQuality.class, "broken", "Grade it.")
                        .router(client)
                        .score(Map.of("output", "x")))
                .isInstanceOf(JudgeException.class)
                .hasMessageContaining("the server's AI router answered HTTP 500 after 3 attempts")
                .hasMessageContaining("Bearer ***")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain(ROUTER_KEY));
    }

    @Test
    void aServerWithoutARouterSaysHowToConfigureOne() {
        assertThatThrownBy(() -> Scorers.llmJudge(LlmJudgeTest.TraceQuality.class, "grader", "Grade it.")
                        .router(plainClient)
                        .score(Map.of("output", "x")))
                .isInstanceOf(JudgeException.class)
                .hasMessageContaining("this server has no AI router: start it with --ai-endpoint URL")
                .extracting(e -> ((JudgeException) e).statusCode())
                .isEqualTo(Status.Code.FAILED_PRECONDITION);
    }

    @Test
    void theRouterForwardsOnlyTheOpenAiPathsItServes() {
        assertThatThrownBy(() -> AiRouterServiceGrpc.newBlockingStub(client.channel())
                        .forward(ForwardRequest.newBuilder()
                                .setPath("../../admin")
                                .setBody(ByteString.copyFromUtf8("{}"))
                                .build()))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("INVALID_ARGUMENT: the AI router forwards");
    }

    /**
     * The router read a provider's answer whole into the server's heap, for any caller with a token (a workload's
     * included): an answer past the router's bound is refused instead, saying so.
     */
    @Test
    void anAnswerPastTheRoutersBoundIsRefusedNotHeld() {
        assertThatThrownBy(() -> AiRouterServiceGrpc.newBlockingStub(client.channel())
                        .forward(ForwardRequest.newBuilder()
                                .setPath("chat/completions")
                                .setBody(
                                        ByteString.copyFromUtf8(
                                                "{\"model\": \"verbose\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}"))
                                .build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                    assertThat(e.getStatus().getDescription()).contains("larger than 16 MiB");
                });
    }
}
