package ai.chalk.compute.evaluation.judge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.evaluation.Scorers;
import ai.chalk.compute.secret.Secret;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class LlmJudgeTest {

    /** The grade of the SDK's example, in Java. */
    record TraceQuality(
            @JudgeField(min = 0, max = 1, description = "Overall quality.")
            double score,

            @JudgeField(min = 0, max = 2, description = "Shortest reasonable path to the goal.")
            int directness,

            @JudgeField(min = 0, max = 2, description = "Was the task actually completed?")
            int taskCorrectness,

            String reason) {}

    record Verdict(@JudgeField(min = 0, max = 1) double score, String reason) {}

    record NoScore(String reason) {}

    record HTTPCheck(double score, Map<String, String> details) {}

    private static final String KEY_VARIABLE = "CHALK_JUDGE_TEST_KEY";
    private static final String INSTRUCTIONS = "You are grading a browser agent's login attempt.";
    private static final ObjectMapper JSON = new ObjectMapper();

    private StandInOpenAiServer llm;
    private ListAppender<ILoggingEvent> logs;
    private String key;

    @BeforeEach
    void start() throws IOException {
        key = System.getenv(KEY_VARIABLE);
        assertThat(key).as("surefire sets " + KEY_VARIABLE).startsWith("sk-");
        llm = new StandInOpenAiServer();
        logs = new ListAppender<>();
        logs.start();
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(logs);
    }

    @AfterEach
    void noLogLineShowsTheKey() {
        ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(logs);
        llm.close();
        for (ILoggingEvent event : logs.list) {
            assertThat(event.getFormattedMessage()).doesNotContain(key);
            if (event.getThrowableProxy() != null) {
                assertThat(ThrowableProxyUtil.asString(event.getThrowableProxy()))
                        .doesNotContain(key);
            }
        }
    }

    private LlmJudge<TraceQuality> judge(String model) {
        return Scorers.llmJudge(TraceQuality.class, model, INSTRUCTIONS)
                .baseUrl(llm.baseUrl())
                .apiKey(Secret.fromLocalEnv(KEY_VARIABLE));
    }

    @Test
    void theRecordBecomesAStrictJsonSchemaWithRangesAndDescriptions() throws IOException {
        LlmJudge<TraceQuality> judge = Scorers.llmJudge(TraceQuality.class, "gpt-5", INSTRUCTIONS);
        assertThat(judge.name()).isEqualTo("trace-quality");
        assertThat(judge.inputs()).containsExactly("output");
        assertThat(judge.jsonSchema()).isEqualTo(JSON.readTree("""
                {"type": "object",
                 "properties": {
                   "score": {"type": "number", "description": "Overall quality.", "minimum": 0, "maximum": 1},
                   "directness": {"type": "integer", "description": "Shortest reasonable path to the goal.",
                                  "minimum": 0, "maximum": 2},
                   "taskCorrectness": {"type": "integer", "description": "Was the task actually completed?",
                                       "minimum": 0, "maximum": 2},
                   "reason": {"type": "string"}},
                 "required": ["score", "directness", "taskCorrectness", "reason"],
                 "additionalProperties": false}
                """));
        assertThat(LlmJudge.kebab("HTTPCheck")).isEqualTo("http-check");
        assertThatThrownBy(() -> Scorers.llmJudge(NoScore.class, "m", "i"))
                .hasMessage("NoScore needs a numeric component named score: it becomes the row's score");
        assertThatThrownBy(() -> Scorers.llmJudge(HTTPCheck.class, "m", "i"))
                .hasMessageContaining("HTTPCheck.details is a java.util.Map<java.lang.String, java.lang.String>");
    }

    @Test
    void aGradeComesBackThroughStructuredOutputsAsScoreAndMetadata() {
        LlmJudge<TraceQuality> judge = judge("grader").completionOptions(Map.of("temperature", 0, "max_tokens", 400));

        EvaluationScorerResult good = judge.score(Map.of("output", "Typed the password; page says Welcome, Ada"));
        EvaluationScorerResult bad = judge.score(Map.of("output", "Stuck on the captcha"));

        assertThat(good.score()).isEqualTo(1.0);
        assertThat(good.metadata())
                .containsEntry("directness", 2)
                .containsEntry("taskCorrectness", 2)
                .containsEntry("reason", "reached the dashboard directly")
                .doesNotContainKey("score");
        assertThat(bad.score()).isEqualTo(0.0);
        assertThat(bad.metadata()).containsEntry("directness", 0).containsEntry("reason", "never logged in");

        JsonNode request = llm.received().get(0).body();
        assertThat(llm.received().get(0).authorization()).isEqualTo("Bearer " + key);
        assertThat(request.path("model").asText()).isEqualTo("grader");
        assertThat(request.path("temperature").asInt()).isZero();
        assertThat(request.path("max_tokens").asInt()).isEqualTo(400);
        assertThat(request.path("messages").path(0).path("content").asText()).isEqualTo(INSTRUCTIONS);
        assertThat(request.path("messages").path(1).path("content").asText())
                .isEqualTo("## output\nTyped the password; page says Welcome, Ada");
        JsonNode format = request.path("response_format");
        assertThat(format.path("type").asText()).isEqualTo("json_schema");
        assertThat(format.path("json_schema").path("name").asText()).isEqualTo("trace-quality");
        assertThat(format.path("json_schema").path("strict").asBoolean()).isTrue();
        assertThat(format.path("json_schema").path("schema")).isEqualTo(judge.jsonSchema());
    }

    @Test
    void inputsAndAPromptFunctionShapeTheUserMessage() {
        judge("grader").inputs("input", "output").score(Map.of("input", "log in as Ada", "output", "Welcome"));
        judge("grader")
                .prompt(values -> "Task: " + values.get("input") + "\nTranscript: " + values.get("output"))
                .inputs("input", "output")
                .score(Map.of("input", "log in", "output", "Welcome", "unused", "x"));
        assertThat(llm.received()
                        .get(0)
                        .body()
                        .path("messages")
                        .path(1)
                        .path("content")
                        .asText())
                .isEqualTo("## input\nlog in as Ada\n\n## output\nWelcome");
        assertThat(llm.received()
                        .get(1)
                        .body()
                        .path("messages")
                        .path(1)
                        .path("content")
                        .asText())
                .isEqualTo("Task: log in\nTranscript: Welcome");
        assertThatThrownBy(() -> judge("grader").inputs("trace").score(Map.of("output", "x")))
                .isInstanceOf(JudgeException.class)
                .hasMessageContaining("the row has no column 'trace' for the judge; its columns are [output]")
                .extracting(e -> ((JudgeException) e).statusCode())
                .isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(llm.received()).hasSize(2);
    }

    @Test
    void aMalformedGradeFailsTheRow() {
        assertThatThrownBy(() -> judge("malformed").score(Map.of("output", "Welcome")))
                .isInstanceOf(JudgeException.class)
                .hasMessageContaining("malformed TraceQuality grade: the reply of model malformed is not JSON")
                .extracting(e -> ((JudgeException) e).statusCode())
                .isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThatThrownBy(() -> judge("out-of-range").score(Map.of("output", "Welcome")))
                .hasMessageContaining("malformed TraceQuality grade: score is 7, outside [0, 1]");
    }

    @Test
    void anEndpointWithoutStructuredOutputsIsReadByTheParseFunctionAndStillChecked() {
        Pattern reply = Pattern.compile("SCORE: (\\S+)\\nREASON: (.*)");
        LlmJudge<Verdict> judge = Scorers.llmJudge(Verdict.class, "plain-text", "Grade it.")
                .baseUrl(llm.baseUrl())
                .apiKey(Secret.fromLocalEnv(KEY_VARIABLE))
                .parse(text -> {
                    Matcher m = reply.matcher(text);
                    if (!m.matches()) {
                        throw new IllegalArgumentException("no SCORE line in: " + text);
                    }
                    return new Verdict(Double.parseDouble(m.group(1)), m.group(2));
                });
        EvaluationScorerResult result = judge.score(Map.of("output", "Welcome"));
        assertThat(result.score()).isCloseTo(0.8, within(1e-12));
        assertThat(result.metadata()).containsEntry("reason", "reached the dashboard");
        assertThat(llm.received().get(0).body().has("response_format")).isFalse();
        assertThat(judge.name()).isEqualTo("verdict");

        assertThatThrownBy(() -> judge.parse(text -> new Verdict(8, text)).score(Map.of("output", "x")))
                .hasMessageContaining("malformed Verdict grade: score is 8.0, outside [0, 1]");
        assertThatThrownBy(() -> judge.parse(text -> {
                            throw new IllegalStateException("cannot read it");
                        })
                        .score(Map.of("output", "x")))
                .hasMessageContaining("the parse function failed: cannot read it");
    }

    @Test
    void aRateLimitIsRetriedAfterRetryAfter() {
        EvaluationScorerResult result = judge("busy").score(Map.of("output", "Welcome"));
        assertThat(result.score()).isEqualTo(1.0);
        assertThat(llm.calls("busy")).isEqualTo(2);
        assertThat(logs.list)
                .anySatisfy(event -> assertThat(event.getFormattedMessage())
                        .contains("judge request for model busy")
                        .contains("answered HTTP 429; retrying in 0 ms"));
    }

    @Test
    void aServerErrorIsRetriedThenFailsTheRowWithoutShowingTheKey() {
        assertThatThrownBy(() -> judge("broken").score(Map.of("output", "Welcome")))
                .isInstanceOf(JudgeException.class)
                .hasMessageContaining("answered HTTP 500 after 3 attempts for model broken: "
                        + "internal error while serving Bearer ***")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain(key))
                .extracting(e -> ((JudgeException) e).statusCode())
                .isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(llm.calls("broken")).isEqualTo(3);
        assertThatThrownBy(() -> judge("no-such-model").score(Map.of("output", "x")))
                .hasMessageContaining(
                        "answered HTTP 404 for model no-such-model: The model `no-such-model` does not exist");
    }

    @Test
    void completionOptionsCannotReplaceWhatTheJudgeSets() {
        assertThatThrownBy(() -> judge("grader").completionOptions(Map.of("response_format", Map.of())))
                .hasMessageContaining("completion option response_format is set by the judge itself");
    }

    @Test
    void aJudgeNamingNoProviderSaysWhatToGiveIt() {
        assertThatThrownBy(() -> Scorers.llmJudge(TraceQuality.class, "gpt-5", INSTRUCTIONS)
                        .score(Map.of("output", "x")))
                .isInstanceOf(JudgeException.class)
                .hasMessageContaining("AI router");
        assertThatThrownBy(() -> judge("grader")
                        .apiKey(Secret.fromChalkEnv("NOT_IN_THIS_PROCESS_KEY"))
                        .score(Map.of("output", "x")))
                .hasMessageContaining(
                        "the judge's API key secret NOT_IN_THIS_PROCESS_KEY is not in this " + "process's environment");
        assertThatThrownBy(() -> judge("grader").baseUrl("file:///etc/passwd"))
                .hasMessageContaining("a judge's baseUrl is an http or https URL");
        assertThat(llm.received()).isEmpty();
    }

    @Test
    void jevKeepsAConfidentCheapVerdictFromTokenLogProbabilities() {
        EvaluationScorerResult result = jev("cheap").score(row("The answer meets every criterion."));
        assertThat(result.score()).isEqualTo(1.0);
        assertThat(result.metadata())
                .containsEntry("label", "Y")
                .containsEntry("escalated", false)
                .containsEntry("judge_model", "cheap");
        // the log-probabilities say 0.97 while the model reports 0.99: the tokens are believed
        assertThat((Double) result.metadata().get("confidence")).isCloseTo(0.97, within(1e-6));
        assertThat((Double) result.metadata().get("primary_confidence")).isCloseTo(0.97, within(1e-6));
        JsonNode request = llm.received().get(0).body();
        assertThat(request.path("logprobs").asBoolean()).isTrue();
        assertThat(request.path("top_logprobs").asInt()).isEqualTo(5);
        assertThat(request.path("response_format")
                        .path("json_schema")
                        .path("schema")
                        .path("properties")
                        .path("label")
                        .path("enum")
                        .toString())
                .isEqualTo("[\"Y\",\"N\"]");
        assertThat(request.path("messages").path(1).path("content").asText())
                .isEqualTo("## input\nq\n\n## output\nThe answer meets every criterion.\n\n## criteria\nc");
        assertThat(llm.calls("strong")).isZero();
    }

    @Test
    void jevEscalatesAnUnsureRowAndTheFallbacksGradeStands() {
        EvaluationScorerResult result = jev("cheap").score(row("An ambiguous answer."));
        assertThat(result.score()).isEqualTo(0.0);
        assertThat(result.metadata())
                .containsEntry("label", "N")
                .containsEntry("escalated", true)
                .containsEntry("judge_model", "strong");
        assertThat((Double) result.metadata().get("confidence")).isCloseTo(0.99, within(1e-6));
        assertThat((Double) result.metadata().get("primary_confidence")).isCloseTo(0.6, within(1e-6));
        assertThat(llm.calls("strong")).isEqualTo(1);
    }

    @Test
    void jevFallsBackToSelfReportedProbabilitiesWithoutLogProbabilities() {
        EvaluationScorerResult sure = jev("cheap-no-logprobs").score(row("Clear."));
        EvaluationScorerResult unsure = jev("cheap-no-logprobs").score(row("An ambiguous answer."));
        assertThat(sure.metadata()).containsEntry("escalated", false);
        assertThat((Double) sure.metadata().get("confidence")).isCloseTo(0.95, within(1e-9));
        assertThat(unsure.metadata()).containsEntry("escalated", true).containsEntry("judge_model", "strong");
        assertThat((Double) unsure.metadata().get("primary_confidence")).isCloseTo(0.55, within(1e-9));
        assertThatThrownBy(() -> Scorers.jev(Map.of("Y", 1.0), "r", "a", "b", 0.9, List.of("output")))
                .hasMessageContaining("at least two labels");
        assertThatThrownBy(() -> Scorers.jev(Map.of("Y", 1.0, "N", 0.0), "r", "a", "b", 1.5, List.of("output")))
                .hasMessageContaining("threshold is a probability in 0..1");
    }

    private JevJudge jev(String model) {
        Map<String, Double> labels = new java.util.LinkedHashMap<>();
        labels.put("Y", 1.0);
        labels.put("N", 0.0);
        return Scorers.jev(
                        labels,
                        "Y. The answer meets the criteria.\nN. It does not.",
                        model,
                        "strong",
                        0.9,
                        List.of("input", "output", "criteria"))
                .baseUrl(llm.baseUrl())
                .apiKey(Secret.fromLocalEnv(KEY_VARIABLE));
    }

    private static Map<String, Object> row(String output) {
        return Map.of("input", "q", "output", output, "criteria", "c");
    }
}
