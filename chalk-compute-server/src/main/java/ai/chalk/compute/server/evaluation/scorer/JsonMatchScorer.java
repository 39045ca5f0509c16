package ai.chalk.compute.server.evaluation.scorer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@code json_match}: without {@code paths}, 1 when the two columns hold the same JSON value (object key order and
 * number spelling aside), else 0; with {@code paths} (dotted, such as {@code answer.city} or {@code items.0.id}) the
 * share of paths on which they agree, the agreeing and disagreeing paths kept. A candidate that is not JSON scores 0
 * and says why; a reference that is not JSON fails the row.
 */
final class JsonMatchScorer implements BuiltinScorer {

    private final List<String> inputs;
    private final List<String> paths;

    JsonMatchScorer(ScorerOptions options) {
        this.inputs = options.inputs(BuiltinScorers.PAIR);
        this.paths = options.strings("paths");
        for (String path : paths) {
            if (path.isEmpty() || path.startsWith(".") || path.endsWith(".") || path.contains("..")) {
                throw new IllegalArgumentException(
                        "json_match paths are dotted names such as answer.city or items.0.id, not '" + path + "'");
            }
        }
    }

    @Override
    public String name() {
        return "json_match";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        JsonNode reference;
        try {
            reference = JsonValues.parse(RowValues.text(row, inputs.get(1)));
        } catch (JsonProcessingException e) {
            throw new RowScoringException(
                    "column '" + inputs.get(1) + "' is not valid JSON: " + e.getOriginalMessage());
        }
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        JsonNode candidate;
        try {
            candidate = JsonValues.parse(RowValues.text(row, inputs.get(0)));
        } catch (JsonProcessingException e) {
            metadata.put("error", inputs.get(0) + " is not valid JSON: " + e.getOriginalMessage());
            return new RowScore(0, metadata);
        }
        if (paths.isEmpty()) {
            boolean match = JsonValues.same(candidate, reference);
            metadata.put("match", match);
            return RowScore.passFail(match, metadata);
        }
        List<String> matched = new ArrayList<>();
        List<String> mismatched = new ArrayList<>();
        for (String path : paths) {
            boolean same = JsonValues.same(JsonValues.at(candidate, path), JsonValues.at(reference, path));
            (same ? matched : mismatched).add(path);
        }
        metadata.put("matched_paths", matched);
        metadata.put("mismatched_paths", mismatched);
        return new RowScore((double) matched.size() / paths.size(), metadata);
    }
}
