package ai.chalk.compute.server.evaluation.scorer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.text.similarity.JaccardSimilarity;
import org.apache.commons.text.similarity.JaroWinklerSimilarity;
import org.jspecify.annotations.Nullable;

/**
 * {@code string_similarity}: one similarity in 0..1, chosen by {@code method}: {@code jaro_winkler} and
 * {@code jaccard} (of the two texts' character sets) from Apache Commons Text; {@code token_set},
 * {@code token_sort} and {@code partial} as RapidFuzz defines its ratios; {@code sequence} as Python's
 * {@code difflib.SequenceMatcher.ratio}.
 */
final class StringSimilarityScorer implements BuiltinScorer {

    static final List<String> METHODS =
            List.of("jaro_winkler", "jaccard", "token_set", "token_sort", "partial", "sequence");

    private final List<String> inputs;
    private final String method;
    private final TextNormalizer normalizer;

    StringSimilarityScorer(ScorerOptions options) {
        this.inputs = options.inputs(BuiltinScorers.PAIR);
        this.method = options.choice("method", "jaro_winkler", METHODS);
        this.normalizer = TextNormalizer.caseOnly(options.bool("case_insensitive", false));
    }

    @Override
    public String name() {
        return "string_similarity";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        String a = normalizer.apply(RowValues.text(row, inputs.get(0)));
        String b = normalizer.apply(RowValues.text(row, inputs.get(1)));
        if (!method.equals("jaccard")) {
            RowWork.check(
                    "string_similarity " + method,
                    a,
                    b,
                    method.equals("partial") ? RowWork.windows(a, b) : RowWork.product(a, b));
        }
        double similarity = similarity(method, a, b);
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        metadata.put("method", method);
        metadata.put("similarity", similarity);
        return new RowScore(Math.min(1, Math.max(0, similarity)), metadata);
    }

    static double similarity(String method, String a, String b) {
        return switch (method) {
            case "jaro_winkler" -> new JaroWinklerSimilarity().apply(new CodePoints(a), new CodePoints(b));
            case "jaccard" ->
                a.isEmpty() && b.isEmpty() ? 1.0 : new JaccardSimilarity().apply(new CodePoints(a), new CodePoints(b));
            case "token_set" -> FuzzyRatios.tokenSetRatio(a, b);
            case "token_sort" -> FuzzyRatios.tokenSortRatio(a, b);
            case "partial" -> FuzzyRatios.partialRatio(a, b);
            case "sequence" -> SequenceMatcher.ratio(a, b);
            default -> throw new IllegalArgumentException("no string similarity " + method + "; one of " + METHODS);
        };
    }
}
