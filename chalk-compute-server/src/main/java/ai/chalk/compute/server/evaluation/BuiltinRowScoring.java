package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.evaluation.v1.EvaluationScorer;
import ai.chalk.compute.server.evaluation.scorer.BuiltinScorer;
import ai.chalk.compute.server.evaluation.scorer.BuiltinScorers;
import ai.chalk.compute.server.evaluation.scorer.RowScore;
import ai.chalk.compute.server.evaluation.scorer.RowScoringException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Scores rows in-process with an evaluation's built-in scorers, each configured once from its pinned id. A row one
 * scorer cannot score is that scorer's failure on that row (its message kept for the result's error column), never
 * the run's: the other scorers and rows go on.
 */
final class BuiltinRowScoring {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * One scorer's verdict on one row.
     *
     * @param scorerId the scorer's id in the evaluation, which names its result columns
     * @param score    between 0 and 1, or null when the scorer failed on the row
     * @param metadata the raw quantities as a JSON object ({@code {}} on failure)
     * @param error    why the scorer failed on the row, or null
     */
    record Cell(
            String scorerId,
            @Nullable Double score,
            String metadata,
            @Nullable String error) {}

    private final List<EvaluationScorer> scorers;
    private final List<BuiltinScorer> configured;

    /**
     * The built-ins among {@code scorers}, configured by {@code builtins}; function scorers are not this class's.
     *
     * @throws IllegalArgumentException when a pinned id no longer parses (it did when the evaluation was created)
     */
    BuiltinRowScoring(List<EvaluationScorer> scorers, BuiltinScorers builtins) {
        this.scorers = scorers.stream().filter(s -> s.getSpec().hasBuiltin()).toList();
        this.configured = this.scorers.stream()
                .map(s -> builtins.create(s.getSpec().getBuiltin().getId()))
                .toList();
    }

    /** Each built-in's verdict on a row: the dataset's columns plus the task's {@code output}. */
    List<Cell> score(Map<String, @Nullable Object> row) {
        List<Cell> out = new ArrayList<>(configured.size());
        for (int i = 0; i < configured.size(); i++) {
            String id = scorers.get(i).getId();
            try {
                RowScore s = configured.get(i).score(row);
                out.add(new Cell(id, s.score(), metadataJson(s.metadata()), null));
            } catch (RowScoringException e) {
                out.add(new Cell(id, null, "{}", id + ": " + e.getMessage()));
            } catch (JsonProcessingException e) {
                out.add(new Cell(id, null, "{}", id + ": its metadata is not JSON: " + e.getOriginalMessage()));
            }
        }
        return out;
    }

    /**
     * The metadata as a JSON object, as Jackson writes it. Most built-ins' metadata are a few flags and numbers under
     * plain keys ({@code {"match":true}}): those are written here, since a Jackson writer per row and scorer was a
     * visible part of a run's CPU; anything else (text, nested values, other keys) goes through Jackson.
     */
    static String metadataJson(Map<String, @Nullable Object> metadata) throws JsonProcessingException {
        StringBuilder out = new StringBuilder(16 + 24 * metadata.size()).append('{');
        for (Map.Entry<String, @Nullable Object> e : metadata.entrySet()) {
            String key = e.getKey();
            Object v = e.getValue();
            if (!plainKey(key)) {
                return JSON.writeValueAsString(metadata);
            }
            if (out.length() > 1) {
                out.append(',');
            }
            out.append('"').append(key).append("\":");
            if (v == null || v instanceof Boolean || v instanceof Long || v instanceof Integer) {
                out.append(v);
            } else if (v instanceof Double d && Double.isFinite(d)) {
                out.append(d.doubleValue()); // Double.toString, as Jackson writes a double
            } else {
                return JSON.writeValueAsString(metadata);
            }
        }
        return out.append('}').toString();
    }

    /** A key JSON writes as it is: letters, digits and underscores. */
    private static boolean plainKey(@Nullable String key) {
        if (key == null || key.isEmpty()) {
            return false;
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_')) {
                return false;
            }
        }
        return true;
    }
}
