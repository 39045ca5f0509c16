package ai.chalk.compute.server.evaluation.scorer;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** {@code json_valid}: 1 when the column holds exactly one JSON value (nothing after it), else 0 with the reason. */
final class JsonValidScorer implements BuiltinScorer {

    private final List<String> inputs;

    JsonValidScorer(ScorerOptions options) {
        this.inputs = options.inputs(BuiltinScorers.SINGLE);
    }

    @Override
    public String name() {
        return "json_valid";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        try {
            JsonValues.parse(RowValues.text(row, inputs.get(0)));
            metadata.put("valid", true);
            return new RowScore(1, metadata);
        } catch (JsonProcessingException e) {
            metadata.put("valid", false);
            metadata.put("error", e.getOriginalMessage());
            return new RowScore(0, metadata);
        }
    }
}
