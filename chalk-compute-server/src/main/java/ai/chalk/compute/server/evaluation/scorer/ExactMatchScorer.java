package ai.chalk.compute.server.evaluation.scorer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** {@code exact_match}: 1 when the two columns hold the same text after the chosen normalization, else 0. */
final class ExactMatchScorer implements BuiltinScorer {

    private final List<String> inputs;
    private final TextNormalizer normalizer;

    ExactMatchScorer(ScorerOptions options) {
        this.inputs = options.inputs(BuiltinScorers.PAIR);
        this.normalizer = new TextNormalizer(
                options.bool("trim", true),
                options.bool("collapse_whitespace", false),
                options.bool("case_insensitive", false));
    }

    @Override
    public String name() {
        return "exact_match";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        boolean match = normalizer
                .apply(RowValues.text(row, inputs.get(0)))
                .equals(normalizer.apply(RowValues.text(row, inputs.get(1))));
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        metadata.put("match", match);
        return RowScore.passFail(match, metadata);
    }
}
