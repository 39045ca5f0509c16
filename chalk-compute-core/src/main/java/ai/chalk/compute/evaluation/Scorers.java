package ai.chalk.compute.evaluation;

import ai.chalk.compute.evaluation.judge.JevJudge;
import ai.chalk.compute.evaluation.judge.LlmJudge;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Scorers that need no function body: the nine built-ins, which the server runs, and LLM judges. Each built-in
 * compares a candidate column (by default the task's {@code output}) with a reference column (by default
 * {@code expected}), scores between 0 and 1, and records the raw quantity (a distance, the match, a similarity) as
 * row metadata. Options take the SDK's names through {@link BuiltinScorer#with}.
 * <pre>{@code
 * List<Scorer> scorers = List.of(
 *         Scorers.exactMatch().with("case_insensitive", true),
 *         Scorers.numericClose(0.01).inputs("output", "price"),
 *         Scorers.stringSimilarity("token_set"),
 *         Scorers.llmJudge(TraceQuality.class, "gpt-5", "You are grading a browser agent's login attempt."));
 * }</pre>
 */
public final class Scorers {

    /** Each built-in's options, by their SDK names. */
    static final Map<String, List<String>> OPTIONS = options();

    private Scorers() {}

    /**
     * {@code exact_match}: 1 when the two columns hold the same text. Options: {@code trim} (default true),
     * {@code collapse_whitespace}, {@code case_insensitive} (case folding).
     *
     * @return the scorer
     */
    public static BuiltinScorer exactMatch() {
        return builtin("exact_match");
    }

    /**
     * {@code levenshtein}: 1 − edit distance / length of the longer text; the distance as metadata. Options:
     * {@code trim}, {@code collapse_whitespace}, {@code case_insensitive}.
     *
     * @return the scorer
     */
    public static BuiltinScorer levenshtein() {
        return builtin("levenshtein");
    }

    /**
     * {@code regex_match} with a fixed pattern (Java syntax): 1 when it is found in the candidate column, or covers
     * it with {@code full_match}; the match and its named groups as metadata. Option {@code case_insensitive}.
     *
     * @param pattern the regular expression
     * @return the scorer
     */
    public static BuiltinScorer regexMatch(String pattern) {
        return builtin("regex_match").with("pattern", pattern);
    }

    /**
     * {@code regex_match} with the pattern read from each row's reference column.
     *
     * @return the scorer
     */
    public static BuiltinScorer regexMatch() {
        return builtin("regex_match");
    }

    /**
     * {@code contains}: the reference column's substring, or JSON array of substrings, looked for in the candidate.
     * Options: {@code mode} ({@code all}, {@code any} or {@code fraction}; default {@code all}),
     * {@code case_insensitive}.
     *
     * @return the scorer
     */
    public static BuiltinScorer contains() {
        return builtin("contains");
    }

    /**
     * {@code numeric_close} within an absolute tolerance. Other options: {@code rel_tol} (default 1e-9),
     * {@code graded} (score falling linearly to 0 at a difference of {@code scale}, by default the reference's
     * magnitude).
     *
     * @param absoluteTolerance the largest difference that still scores 1
     * @return the scorer
     */
    public static BuiltinScorer numericClose(double absoluteTolerance) {
        return builtin("numeric_close").with("abs_tol", absoluteTolerance);
    }

    /**
     * {@code string_similarity} by one method: {@code jaro_winkler}, {@code jaccard}, {@code token_set},
     * {@code token_sort}, {@code partial} or {@code sequence}. Option {@code case_insensitive}.
     *
     * @param method the method
     * @return the scorer
     */
    public static BuiltinScorer stringSimilarity(String method) {
        return builtin("string_similarity").with("method", method);
    }

    /**
     * {@code json_valid}: 1 when the column (by default {@code output}) holds one JSON value.
     *
     * @return the scorer
     */
    public static BuiltinScorer jsonValid() {
        return builtin("json_valid");
    }

    /**
     * {@code json_match}: the same JSON value, or, given paths, the share of dotted paths ({@code answer.city},
     * {@code items.0.id}) on which the two columns agree.
     *
     * @param paths dotted paths; none compares whole values
     * @return the scorer
     */
    public static BuiltinScorer jsonMatch(String... paths) {
        BuiltinScorer scorer = builtin("json_match");
        return paths.length == 0 ? scorer : scorer.with("paths", List.of(paths));
    }

    /**
     * {@code embedding_similarity} with the all-MiniLM-L6-v2 model, which the server runs itself: cosine similarity
     * of the two columns' embeddings (clipped at 0), the cosine as metadata.
     *
     * @return the scorer
     */
    public static BuiltinScorer embeddingSimilarity() {
        return builtin("embedding_similarity");
    }

    /**
     * {@code embedding_similarity} through an OpenAI-compatible embeddings endpoint.
     *
     * @param baseUrl      the endpoint's base URL, such as {@code https://api.openai.com/v1}
     * @param model        the embedding model, such as {@code text-embedding-3-small}
     * @param apiKeySecret the name of the environment secret holding the API key; the server reads it, so the key
     *                     never travels with the evaluation
     * @return the scorer
     */
    public static BuiltinScorer embeddingSimilarity(String baseUrl, String model, String apiKeySecret) {
        return builtin("embedding_similarity")
                .with("base_url", baseUrl)
                .with("model", model)
                .with("api_key_secret", apiKeySecret);
    }

    /**
     * An LLM judge from a record: its {@code score} component is the score and every other component row
     * metadata; {@link ai.chalk.compute.evaluation.judge.JudgeField} on a component gives the model its description
     * and range. The reply is requested with structured outputs and checked against the record, so a malformed
     * grade fails the row. Named after the record in kebab case ({@code TraceQuality} → {@code trace-quality}).
     *
     * @param grade        the record the judge fills in
     * @param model        the model, such as {@code gpt-5}
     * @param instructions the system instructions
     * @param <T>          the record type
     * @return the judge; set inputs, prompt, provider and completion options on it
     */
    public static <T extends Record> LlmJudge<T> llmJudge(Class<T> grade, String model, String instructions) {
        return LlmJudge.of(grade, model, instructions);
    }

    /**
     * A judge that escalates when unsure (JEV): {@code model} picks a label and gives a probability for every
     * label (from the reply's token log-probabilities where the endpoint gives them, else its own); a row whose
     * probability on its choice is below {@code threshold} is graded again by {@code fallbackModel}, whose grade
     * stands. Metadata: {@code confidence}, {@code escalated}, {@code judge_model}, {@code primary_confidence}.
     *
     * @param labels        each label's score, such as {@code Map.of("Y", 1.0, "N", 0.0)}
     * @param rubric        what each label means
     * @param model         the cheap model
     * @param fallbackModel the model that grades unsure rows
     * @param threshold     the confidence below which a row escalates, in 0..1
     * @param inputs        the columns the judge reads, such as {@code input}, {@code output}, {@code criteria}
     * @return the judge
     */
    public static JevJudge jev(
            Map<String, Double> labels,
            String rubric,
            String model,
            String fallbackModel,
            double threshold,
            List<String> inputs) {
        return JevJudge.of(labels, rubric, model, fallbackModel, threshold, inputs);
    }

    private static BuiltinScorer builtin(String name) {
        return new BuiltinScorer(name, Map.of());
    }

    private static Map<String, List<String>> options() {
        Map<String, List<String>> options = new LinkedHashMap<>();
        options.put("exact_match", List.of("inputs", "trim", "collapse_whitespace", "case_insensitive"));
        options.put("levenshtein", List.of("inputs", "trim", "collapse_whitespace", "case_insensitive"));
        options.put("regex_match", List.of("inputs", "pattern", "full_match", "case_insensitive"));
        options.put("contains", List.of("inputs", "mode", "case_insensitive"));
        options.put("numeric_close", List.of("inputs", "abs_tol", "rel_tol", "graded", "scale"));
        options.put("string_similarity", List.of("inputs", "method", "case_insensitive"));
        options.put("json_valid", List.of("inputs"));
        options.put("json_match", List.of("inputs", "paths"));
        options.put("embedding_similarity", List.of("inputs", "model", "base_url", "api_key_secret"));
        return java.util.Collections.unmodifiableMap(options);
    }
}
