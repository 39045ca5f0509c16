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

/**
 * A judge that escalates when unsure, the cascade from JEV-as-a-Judge: a cheap model picks a label and a probability
 * for every label; a row whose probability on the chosen label is below the threshold is graded again by the
 * fallback model, whose label stands. The probabilities come from the reply's token log-probabilities where the
 * endpoint gives them, else from the model's own report (which is not calibrated on every task: choose the
 * threshold on a small labeled sample). Metadata: {@code label}, {@code confidence}, {@code escalated},
 * {@code judge_model} and {@code primary_confidence}, so a run shows its own escalation rate. Make one with
 * {@link ai.chalk.compute.evaluation.Scorers#jev}; setters return changed copies.
 */
public final class JevJudge implements Scorer {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Map<String, Double> labels;
    private final String rubric;
    private final String model;
    private final String fallbackModel;
    private final double threshold;
    private final List<String> inputs;
    private final String name;
    private final Map<String, Object> completionOptions;
    private final JudgeProvider provider;

    private JevJudge(
            Map<String, Double> labels,
            String rubric,
            String model,
            String fallbackModel,
            double threshold,
            List<String> inputs,
            String name,
            Map<String, Object> completionOptions,
            JudgeProvider provider) {
        this.labels = labels;
        this.rubric = rubric;
        this.model = model;
        this.fallbackModel = fallbackModel;
        this.threshold = threshold;
        this.inputs = inputs;
        this.name = name;
        this.completionOptions = completionOptions;
        this.provider = provider;
    }

    /**
     * A JEV judge; {@link ai.chalk.compute.evaluation.Scorers#jev} says the same.
     *
     * @param labels        each label's score, in the order the model is shown them
     * @param rubric        what each label means
     * @param model         the cheap model
     * @param fallbackModel the model that grades unsure rows
     * @param threshold     the confidence below which a row escalates, in 0..1
     * @param inputs        the columns the judge reads
     * @return the judge, named {@code jev}
     */
    public static JevJudge of(
            Map<String, Double> labels,
            String rubric,
            String model,
            String fallbackModel,
            double threshold,
            List<String> inputs) {
        if (labels.size() < 2) {
            throw new IllegalArgumentException("a JEV judge picks between at least two labels, not " + labels.keySet());
        }
        labels.forEach((label, score) -> {
            if (label.isBlank() || score == null || !Double.isFinite(score)) {
                throw new IllegalArgumentException("JEV label '" + label + "' needs a name and a finite score");
            }
        });
        if (!(threshold >= 0 && threshold <= 1)) {
            throw new IllegalArgumentException("a JEV threshold is a probability in 0..1, not " + threshold);
        }
        if (inputs.isEmpty()) {
            throw new IllegalArgumentException("a JEV judge reads at least one column");
        }
        return new JevJudge(
                Collections.unmodifiableMap(new LinkedHashMap<>(labels)),
                Objects.requireNonNull(rubric, "rubric"),
                Objects.requireNonNull(model, "model"),
                Objects.requireNonNull(fallbackModel, "fallbackModel"),
                threshold,
                List.copyOf(inputs),
                "jev",
                Map.of(),
                new JudgeProvider(null, null));
    }

    /**
     * A copy with another name (by default {@code jev}).
     *
     * @param name the scorer's name
     * @return the copy
     */
    public JevJudge name(String name) {
        return new JevJudge(labels, rubric, model, fallbackModel, threshold, inputs, name, completionOptions, provider);
    }

    /**
     * A copy whose requests carry these options as given.
     *
     * @param options request fields by their OpenAI names
     * @return the copy
     */
    public JevJudge completionOptions(Map<String, ?> options) {
        return new JevJudge(
                labels,
                rubric,
                model,
                fallbackModel,
                threshold,
                inputs,
                name,
                LlmJudge.checkOptions(options),
                provider);
    }

    /**
     * A copy calling a provider directly with this API key.
     *
     * @param apiKey {@code Secret.fromChalkEnv(name)} or {@code Secret.fromLocalEnv(variable)}
     * @return the copy
     */
    public JevJudge apiKey(Secret apiKey) {
        return new JevJudge(
                labels,
                rubric,
                model,
                fallbackModel,
                threshold,
                inputs,
                name,
                completionOptions,
                new JudgeProvider(provider.baseUrl(), Objects.requireNonNull(apiKey), provider.router()));
    }

    /**
     * A copy calling another OpenAI-compatible endpoint.
     *
     * @param baseUrl the base URL
     * @return the copy
     */
    public JevJudge baseUrl(String baseUrl) {
        return new JevJudge(
                labels,
                rubric,
                model,
                fallbackModel,
                threshold,
                inputs,
                name,
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
    public JevJudge router(ai.chalk.compute.sandbox.SandboxClient client) {
        return new JevJudge(
                labels,
                rubric,
                model,
                fallbackModel,
                threshold,
                inputs,
                name,
                completionOptions,
                new JudgeProvider(provider.baseUrl(), provider.apiKey(), client.channel()));
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * Grades one row, escalating when the cheap model is unsure.
     *
     * @param row the row's values by column name
     * @return the chosen label's score, with the metadata above
     * @throws JudgeException when the row cannot be graded
     */
    public EvaluationScorerResult score(Map<String, ?> row) {
        ChatCompletions endpoint = provider.connect();
        String user = LlmJudge.userMessage(inputs, row, null);
        Verdict primary = ask(endpoint, model, user);
        Verdict verdict = primary.confidence() < threshold ? ask(endpoint, fallbackModel, user) : primary;
        Map<String, Object> metadata = new LinkedHashMap<>();
        metadata.put("label", verdict.label());
        metadata.put("confidence", verdict.confidence());
        metadata.put("escalated", verdict != primary);
        metadata.put("judge_model", verdict == primary ? model : fallbackModel);
        metadata.put("primary_confidence", primary.confidence());
        metadata.put("probabilities", verdict.probabilities());
        return EvaluationScorerResult.of(labels.get(verdict.label()), metadata);
    }

    private record Verdict(String label, double confidence, Map<String, Double> probabilities) {}

    private Verdict ask(ChatCompletions endpoint, String model, String user) {
        List<String> names = List.copyOf(labels.keySet());
        ObjectNode request = JSON.createObjectNode().put("model", model);
        request.putArray("messages")
                .add(LlmJudge.message(
                        "system",
                        "You are a judge. Read the rubric, pick exactly one label for the "
                                + "row, and give your probability for every label (they sum to 1).\n\nLabels: "
                                + String.join(", ", names) + "\n\nRubric:\n" + rubric))
                .add(LlmJudge.message("user", user));
        ObjectNode schema = JSON.createObjectNode().put("type", "object");
        ObjectNode properties = schema.putObject("properties");
        ObjectNode label = properties.putObject("label").put("type", "string");
        names.forEach(label.putArray("enum")::add);
        ObjectNode probabilities = properties.putObject("probabilities").put("type", "object");
        ObjectNode each = probabilities.putObject("properties");
        names.forEach(
                n -> each.putObject(n).put("type", "number").put("minimum", 0).put("maximum", 1));
        names.forEach(probabilities.putArray("required")::add);
        probabilities.put("additionalProperties", false);
        schema.putArray("required").add("label").add("probabilities");
        schema.put("additionalProperties", false);
        request.putObject("response_format")
                .put("type", "json_schema")
                .putObject("json_schema")
                .put("name", "jev_verdict")
                .put("strict", true)
                .set("schema", schema);
        request.put("logprobs", true).put("top_logprobs", Math.min(20, Math.max(5, names.size())));
        completionOptions.forEach((key, value) -> request.set(key, JSON.valueToTree(value)));

        JsonNode choice = endpoint.complete(request);
        JsonNode reply;
        try {
            reply = JSON.readTree(choice.path("message").path("content").asText(""));
        } catch (JsonProcessingException e) {
            throw new JudgeException(
                    Status.Code.INVALID_ARGUMENT,
                    "malformed JEV verdict: the reply of model " + model + " is not JSON: " + e.getOriginalMessage());
        }
        String chosen = reply == null ? "" : reply.path("label").asText("");
        if (!labels.containsKey(chosen)) {
            throw new JudgeException(
                    Status.Code.INVALID_ARGUMENT,
                    "malformed JEV verdict: model " + model + " chose "
                            + (reply == null ? "nothing" : reply.path("label")) + ", not one of " + names);
        }
        Map<String, Double> p = LabelProbabilities.fromLogprobs(choice, names);
        if (p == null) {
            p = LabelProbabilities.selfReported(reply.path("probabilities"), names);
        }
        if (p == null) {
            throw new JudgeException(
                    Status.Code.INVALID_ARGUMENT,
                    "malformed JEV verdict: model " + model + " gave no probabilities for " + names
                            + " and the endpoint no log-probabilities");
        }
        return new Verdict(chosen, p.get(chosen), p);
    }

    /** What a function worker needs to make this judge again, as JSON, the provider's key aside. */
    ObjectNode spec() {
        ObjectNode spec = JSON.createObjectNode().put("kind", "jev");
        spec.set("labels", JSON.valueToTree(labels));
        spec.put("rubric", rubric)
                .put("model", model)
                .put("fallback_model", fallbackModel)
                .put("threshold", threshold)
                .put("name", name);
        inputs.forEach(spec.putArray("inputs")::add);
        spec.set("completion_options", JSON.valueToTree(completionOptions));
        provider.describe(spec);
        return spec;
    }

    /** The judge {@link #spec()} describes. */
    @SuppressWarnings("unchecked")
    static JevJudge fromSpec(JsonNode spec, JudgeProvider provider) {
        Map<String, Double> labels = new LinkedHashMap<>();
        spec.path("labels")
                .fields()
                .forEachRemaining(e -> labels.put(e.getKey(), e.getValue().asDouble()));
        List<String> columns = new java.util.ArrayList<>();
        spec.path("inputs").forEach(c -> columns.add(c.asText()));
        JevJudge judge = of(
                labels,
                spec.path("rubric").asText(),
                spec.path("model").asText(),
                spec.path("fallback_model").asText(),
                spec.path("threshold").asDouble(),
                columns);
        return new JevJudge(
                judge.labels,
                judge.rubric,
                judge.model,
                judge.fallbackModel,
                judge.threshold,
                judge.inputs,
                spec.path("name").asText(),
                LlmJudge.checkOptions(JSON.convertValue(spec.path("completion_options"), Map.class)),
                provider);
    }

    /**
     * The columns the judge reads.
     *
     * @return the column names
     */
    public List<String> inputs() {
        return inputs;
    }

    JudgeProvider provider() {
        return provider;
    }

    @Override
    public String toString() {
        return "JevJudge[" + name + ", labels=" + labels.keySet() + ", model=" + model + ", fallback=" + fallbackModel
                + ", threshold=" + threshold + "]";
    }
}
