package ai.chalk.compute.evaluation.judge;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.evaluation.Scorer;
import ai.chalk.compute.secret.Secret;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Status;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A scorer that asks a model to fill in a grade record: its {@code score} component becomes the row's score and every
 * other component row metadata. The request carries the record as a strict JSON schema (structured outputs), and
 * the reply is checked against it, ranges included, so a malformed grade fails the row. Make one with
 * {@link ai.chalk.compute.evaluation.Scorers#llmJudge}; values are immutable, each setter returns a changed copy.
 * <pre>{@code
 * record TraceQuality(
 *         @JudgeField(min = 0, max = 1, description = "Overall quality.") double score,
 *         @JudgeField(min = 0, max = 2, description = "Shortest reasonable path to the goal.") int directness,
 *         @JudgeField(min = 0, max = 2, description = "Was the task actually completed?") int taskCorrectness,
 *         String reason) {}
 *
 * LlmJudge<TraceQuality> judge = Scorers.llmJudge(TraceQuality.class, "gpt-5",
 *                 "You are grading a browser agent's login attempt.")
 *         .apiKey(Secret.fromChalkEnv("OPENAI_API_KEY"))
 *         .completionOptions(Map.of("temperature", 0, "max_tokens", 400));
 * EvaluationScorerResult result = judge.score(Map.of("output", trace));
 * }</pre>
 *
 * @param <T> the grade record
 */
public final class LlmJudge<T extends Record> implements Scorer {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> RESERVED = Set.of("model", "messages", "response_format");

    private final JudgeSchema<T> schema;
    private final String name;
    private final String model;
    private final String instructions;
    private final List<String> inputs;
    private final @Nullable Function<Map<String, Object>, String> prompt;
    private final @Nullable Function<String, T> parse;
    private final Map<String, Object> completionOptions;
    private final JudgeProvider provider;

    private LlmJudge(
            JudgeSchema<T> schema,
            String name,
            String model,
            String instructions,
            List<String> inputs,
            @Nullable Function<Map<String, Object>, String> prompt,
            @Nullable Function<String, T> parse,
            Map<String, Object> completionOptions,
            JudgeProvider provider) {
        this.schema = schema;
        this.name = name;
        this.model = model;
        this.instructions = instructions;
        this.inputs = inputs;
        this.prompt = prompt;
        this.parse = parse;
        this.completionOptions = completionOptions;
        this.provider = provider;
    }

    /**
     * A judge; {@link ai.chalk.compute.evaluation.Scorers#llmJudge} says the same.
     *
     * @param grade        the grade record, with a numeric {@code score} component
     * @param model        the model
     * @param instructions the system instructions
     * @param <T>          the record type
     * @return the judge, reading {@code output}, named after the record in kebab case
     * @throws IllegalArgumentException when the record has no numeric {@code score} or a component the schema
     *                                  cannot express
     */
    public static <T extends Record> LlmJudge<T> of(Class<T> grade, String model, String instructions) {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(instructions, "instructions");
        JudgeSchema<T> schema = new JudgeSchema<>(grade);
        return new LlmJudge<>(
                schema,
                kebab(grade.getSimpleName()),
                model,
                instructions,
                List.of("output"),
                null,
                null,
                Map.of(),
                new JudgeProvider(null, null));
    }

    /**
     * A copy with another name (by default the record's name in kebab case).
     *
     * @param name the scorer's name
     * @return the copy
     */
    public LlmJudge<T> name(String name) {
        if (name.isBlank()) {
            throw new IllegalArgumentException("a judge's name is not blank");
        }
        return new LlmJudge<>(schema, name, model, instructions, inputs, prompt, parse, completionOptions, provider);
    }

    /**
     * A copy reading other columns (by default {@code output}).
     *
     * @param columns the columns the prompt shows the model
     * @return the copy
     */
    public LlmJudge<T> inputs(String... columns) {
        if (columns.length == 0) {
            throw new IllegalArgumentException("a judge reads at least one column");
        }
        return new LlmJudge<>(
                schema, name, model, instructions, List.of(columns), prompt, parse, completionOptions, provider);
    }

    /**
     * A copy that writes its own prompt from the input columns' values (by default each column under a heading).
     *
     * @param prompt the user message from the row's inputs, by column name
     * @return the copy
     */
    public LlmJudge<T> prompt(Function<Map<String, Object>, String> prompt) {
        return new LlmJudge<>(
                schema,
                name,
                model,
                instructions,
                inputs,
                Objects.requireNonNull(prompt),
                parse,
                completionOptions,
                provider);
    }

    /**
     * A copy for an endpoint without structured outputs: no schema is sent, and {@code parse} turns the reply's text
     * into the grade, which is still checked against the record's ranges.
     *
     * @param parse the reply's text to the grade
     * @return the copy
     */
    public LlmJudge<T> parse(Function<String, T> parse) {
        return new LlmJudge<>(
                schema,
                name,
                model,
                instructions,
                inputs,
                prompt,
                Objects.requireNonNull(parse),
                completionOptions,
                provider);
    }

    /**
     * A copy whose requests carry these options as given ({@code temperature}, {@code max_tokens}, ...).
     *
     * @param options request fields by their OpenAI names; not {@code model}, {@code messages} or
     *                {@code response_format}, which the judge sets
     * @return the copy
     */
    public LlmJudge<T> completionOptions(Map<String, ?> options) {
        return new LlmJudge<>(
                schema, name, model, instructions, inputs, prompt, parse, checkOptions(options), provider);
    }

    /**
     * A copy calling a provider directly with this API key (OpenAI's API unless {@link #baseUrl} says otherwise).
     *
     * @param apiKey {@code Secret.fromChalkEnv(name)} or {@code Secret.fromLocalEnv(variable)}
     * @return the copy
     */
    public LlmJudge<T> apiKey(Secret apiKey) {
        return new LlmJudge<>(
                schema,
                name,
                model,
                instructions,
                inputs,
                prompt,
                parse,
                completionOptions,
                new JudgeProvider(provider.baseUrl(), Objects.requireNonNull(apiKey), provider.router()));
    }

    /**
     * A copy calling another OpenAI-compatible endpoint.
     *
     * @param baseUrl the base URL, such as {@code http://localhost:11434/v1}
     * @return the copy
     */
    public LlmJudge<T> baseUrl(String baseUrl) {
        return new LlmJudge<>(
                schema,
                name,
                model,
                instructions,
                inputs,
                prompt,
                parse,
                completionOptions,
                new JudgeProvider(Objects.requireNonNull(baseUrl), provider.apiKey(), provider.router()));
    }

    /**
     * A copy that, naming no provider of its own (no {@code apiKey}, no {@code baseUrl}), calls the AI router of the
     * server {@code client} is connected to, with the client's identity; the server holds the provider's key. Without
     * this, such a judge uses the server the environment names ({@code SandboxClient.fromEnv()}).
     *
     * @param client a client of the server
     * @return the copy
     */
    public LlmJudge<T> router(ai.chalk.compute.sandbox.SandboxClient client) {
        return new LlmJudge<>(
                schema,
                name,
                model,
                instructions,
                inputs,
                prompt,
                parse,
                completionOptions,
                new JudgeProvider(provider.baseUrl(), provider.apiKey(), client.channel()));
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * The columns the judge reads.
     *
     * @return the column names
     */
    public List<String> inputs() {
        return inputs;
    }

    /**
     * The JSON schema the requests carry.
     *
     * @return a copy of the schema
     */
    public ObjectNode jsonSchema() {
        return schema.schema();
    }

    /**
     * Grades one row.
     *
     * @param row the row's values by column name
     * @return the grade, checked against the record
     * @throws JudgeException when the row lacks a column, the endpoint fails or the grade is malformed
     */
    public T grade(Map<String, ?> row) {
        ObjectNode request = JSON.createObjectNode().put("model", model);
        request.putArray("messages")
                .add(message("system", instructions))
                .add(message("user", userMessage(inputs, row, prompt)));
        if (parse == null) {
            ObjectNode format = request.putObject("response_format").put("type", "json_schema");
            format.putObject("json_schema")
                    .put("name", name.replaceAll("[^a-zA-Z0-9_-]", "_"))
                    .put("strict", true)
                    .set("schema", schema.schema());
        }
        completionOptions.forEach((key, value) -> request.set(key, JSON.valueToTree(value)));
        JsonNode choice = provider.connect().complete(request);
        String content = choice.path("message").path("content").asText("");
        if (parse != null) {
            T grade;
            try {
                grade = parse.apply(content);
            } catch (RuntimeException e) {
                throw new JudgeException(
                        Status.Code.INVALID_ARGUMENT,
                        "malformed " + schema.typeName() + " grade: the parse function failed: " + e.getMessage());
            }
            if (grade == null) {
                throw new JudgeException(
                        Status.Code.INVALID_ARGUMENT,
                        "malformed " + schema.typeName() + " grade: the parse function returned null");
            }
            return schema.check(grade);
        }
        try {
            return schema.read(JSON.readTree(content));
        } catch (JsonProcessingException e) {
            throw new JudgeException(
                    Status.Code.INVALID_ARGUMENT,
                    "malformed " + schema.typeName() + " grade: the reply of model " + model + " is not JSON: "
                            + e.getOriginalMessage());
        }
    }

    /**
     * Grades one row as a score with the other components as metadata.
     *
     * @param row the row's values by column name
     * @return the score and metadata
     * @throws JudgeException when the row cannot be graded
     */
    public EvaluationScorerResult score(Map<String, ?> row) {
        T grade = grade(row);
        return EvaluationScorerResult.of(schema.score(grade), schema.metadata(grade));
    }

    /**
     * What a function worker needs to make this judge again, as JSON: everything but the provider's key, which
     * travels as a secret. A judge with a prompt or parse function cannot be described so.
     */
    ObjectNode spec() {
        if (prompt != null || parse != null) {
            throw new IllegalArgumentException("the judge " + name + " has a "
                    + (prompt != null ? "prompt" : "parse") + " function, which cannot travel to the function workers"
                    + " that run a judge given as a scorer; call its score(row) from a @ChalkScorer method and give"
                    + " that function as the scorer");
        }
        ObjectNode spec = JSON.createObjectNode()
                .put("kind", "llm_judge")
                .put("grade", schema.type().getName())
                .put("name", name)
                .put("model", model)
                .put("instructions", instructions);
        inputs.forEach(spec.putArray("inputs")::add);
        spec.set("completion_options", JSON.valueToTree(completionOptions));
        provider.describe(spec);
        return spec;
    }

    /** The judge {@link #spec()} describes, its grade record loaded with {@code loader}. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static LlmJudge<?> fromSpec(JsonNode spec, ClassLoader loader, JudgeProvider provider)
            throws ClassNotFoundException {
        Class<?> grade = Class.forName(spec.path("grade").asText(), true, loader);
        if (!grade.isRecord()) {
            throw new IllegalArgumentException(grade.getName() + " is not a record");
        }
        LlmJudge<?> judge = of(
                (Class) grade,
                spec.path("model").asText(),
                spec.path("instructions").asText());
        List<String> columns = new java.util.ArrayList<>();
        spec.path("inputs").forEach(c -> columns.add(c.asText()));
        return new LlmJudge<>(
                (JudgeSchema) judge.schema,
                spec.path("name").asText(),
                judge.model,
                judge.instructions,
                List.copyOf(columns),
                null,
                null,
                checkOptions(JSON.convertValue(spec.path("completion_options"), Map.class)),
                provider);
    }

    /** The grade record. */
    Class<T> gradeType() {
        return schema.type();
    }

    JudgeProvider provider() {
        return provider;
    }

    @Override
    public String toString() {
        return "LlmJudge[" + name + ", model=" + model + ", inputs=" + inputs + "]";
    }

    static ObjectNode message(String role, String content) {
        return JSON.createObjectNode().put("role", role).put("content", content);
    }

    /** The prompt: the function's, or each input column under a heading. */
    static String userMessage(
            List<String> inputs, Map<String, ?> row, @Nullable Function<Map<String, Object>, String> prompt) {
        Map<String, Object> values = new LinkedHashMap<>();
        for (String column : inputs) {
            if (!row.containsKey(column)) {
                throw new JudgeException(
                        Status.Code.FAILED_PRECONDITION,
                        "the row has no column '" + column + "' for the judge; its columns are "
                                + new TreeSet<>(row.keySet()));
            }
            values.put(column, row.get(column));
        }
        if (prompt != null) {
            return prompt.apply(Collections.unmodifiableMap(values));
        }
        StringBuilder text = new StringBuilder();
        values.forEach((column, value) ->
                text.append("## ").append(column).append('\n').append(value).append("\n\n"));
        return text.toString().strip();
    }

    static Map<String, Object> checkOptions(Map<String, ?> options) {
        for (String key : options.keySet()) {
            if (RESERVED.contains(key)) {
                throw new IllegalArgumentException(
                        "completion option " + key + " is set by the judge itself; pass temperature, max_tokens, ...");
            }
        }
        return Collections.unmodifiableMap(new LinkedHashMap<>(options));
    }

    /** {@code TraceQuality} → {@code trace-quality}, {@code HTTPCheck} → {@code http-check}. */
    static String kebab(String name) {
        return name.replaceAll("([a-z0-9])([A-Z])", "$1-$2")
                .replaceAll("([A-Z]+)([A-Z][a-z])", "$1-$2")
                .toLowerCase(java.util.Locale.ROOT);
    }
}
