package ai.chalk.compute.server.evaluation.scorer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.text.similarity.LevenshteinDistance;
import org.jspecify.annotations.Nullable;

/** {@code levenshtein}: 1 − edit distance / length of the longer text (1 for two empty texts); the distance kept. */
final class LevenshteinScorer implements BuiltinScorer {

    private final List<String> inputs;
    private final TextNormalizer normalizer;

    LevenshteinScorer(ScorerOptions options) {
        this.inputs = options.inputs(BuiltinScorers.PAIR);
        this.normalizer = new TextNormalizer(
                options.bool("trim", false),
                options.bool("collapse_whitespace", false),
                options.bool("case_insensitive", false));
    }

    @Override
    public String name() {
        return "levenshtein";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        String candidate = normalizer.apply(RowValues.text(row, inputs.get(0)));
        String reference = normalizer.apply(RowValues.text(row, inputs.get(1)));
        RowWork.check("levenshtein", candidate, reference, RowWork.product(candidate, reference));
        CodePoints a = new CodePoints(candidate);
        CodePoints b = new CodePoints(reference);
        int distance = LevenshteinDistance.getDefaultInstance().apply(a, b);
        int longer = Math.max(a.length(), b.length());
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        metadata.put("distance", distance);
        return new RowScore(longer == 0 ? 1.0 : 1.0 - (double) distance / longer, metadata);
    }
}
