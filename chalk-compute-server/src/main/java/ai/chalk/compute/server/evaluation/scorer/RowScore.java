package ai.chalk.compute.server.evaluation.scorer;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What a built-in scorer gives one row: a score between 0 and 1 and the raw quantity behind it (a distance, a
 * similarity, the match) as row metadata.
 *
 * @param score    between 0 and 1
 * @param metadata JSON-serializable values by name, in insertion order
 */
public record RowScore(double score, Map<String, @Nullable Object> metadata) {

    /** Checks the score lies in 0..1 and copies the metadata. */
    public RowScore {
        if (!(score >= 0 && score <= 1)) {
            throw new IllegalArgumentException("a built-in score lies in 0..1, not " + score);
        }
        metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
    }

    /**
     * A score of 1 when {@code passed}, else 0.
     *
     * @param passed   whether the row passed
     * @param metadata the raw quantities
     * @return the score
     */
    public static RowScore passFail(boolean passed, Map<String, @Nullable Object> metadata) {
        return new RowScore(passed ? 1 : 0, metadata);
    }
}
