package ai.chalk.compute.evaluation;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One score a scorer gives a row of an evaluation, with optional row-level metadata (say, the judge's
 * reasoning) that is recorded beside it.
 * <pre>{@code
 * @ChalkScorer
 * public EvaluationScorerResult responseQuality(String input, String output) {
 *     Grade grade = judge(input, output);
 *     return EvaluationScorerResult.of(grade.score(), Map.of("reason", grade.reason()));
 * }
 * }</pre>
 * A scorer may also return a plain number (just the score) or a {@code List<EvaluationScorerResult>}
 * to give several scores from one computation; an empty list gives that row no score.
 *
 * @param score    the score, normally between 0 and 1
 * @param metadata JSON-serializable details: strings, numbers, booleans, nulls, and lists and maps of
 *                 them, with string keys; copied, never {@code null}
 */
public record EvaluationScorerResult(double score, Map<String, Object> metadata) {

    /** Checks the score is a number and copies the metadata, which must be JSON-serializable. */
    public EvaluationScorerResult {
        if (Double.isNaN(score)) {
            throw new IllegalArgumentException("score must be a number, not NaN");
        }
        metadata = metadata == null ? Map.of() : Collections.unmodifiableMap(copyObject(metadata, "metadata"));
    }

    /**
     * A score without metadata.
     *
     * @param score the score, normally between 0 and 1
     * @return the result
     */
    public static EvaluationScorerResult of(double score) {
        return new EvaluationScorerResult(score, Map.of());
    }

    /**
     * A score with metadata.
     *
     * @param score    the score, normally between 0 and 1
     * @param metadata JSON-serializable details
     * @return the result
     */
    public static EvaluationScorerResult of(double score, Map<String, ?> metadata) {
        return new EvaluationScorerResult(score, new LinkedHashMap<>(metadata));
    }

    private static Map<String, Object> copyObject(Map<?, ?> map, String path) {
        Map<String, Object> copy = new LinkedHashMap<>();
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            if (!(entry.getKey() instanceof String key)) {
                throw new IllegalArgumentException(
                        path + " has the key " + entry.getKey() + ", but JSON keys are strings");
            }
            copy.put(key, copyValue(entry.getValue(), path + "." + key));
        }
        return copy;
    }

    private static Object copyValue(Object value, String path) {
        if (value == null || value instanceof String || value instanceof Boolean) {
            return value;
        }
        if (value instanceof Number n) {
            if ((n instanceof Double d && !Double.isFinite(d)) || (n instanceof Float f && !Float.isFinite(f))) {
                throw new IllegalArgumentException(path + " is " + n + ", which JSON cannot hold");
            }
            return n;
        }
        if (value instanceof Map<?, ?> m) {
            return Collections.unmodifiableMap(copyObject(m, path));
        }
        if (value instanceof List<?> || value instanceof java.util.Collection<?>) {
            List<Object> copy = new ArrayList<>();
            int i = 0;
            for (Object element : (java.util.Collection<?>) value) {
                copy.add(copyValue(element, path + "[" + i++ + "]"));
            }
            return Collections.unmodifiableList(copy);
        }
        throw new IllegalArgumentException(path + " is a " + value.getClass().getName()
                + ", which is not JSON-serializable; use strings, numbers, booleans, lists and maps");
    }

    @Override
    public String toString() {
        return "EvaluationScorerResult[score=" + score + (metadata.isEmpty() ? "" : ", metadata=" + metadata) + "]";
    }
}
