package ai.chalk.compute.server.evaluation.scorer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@code contains}: the expected substrings (the reference column holds one, or a JSON array of them) looked for in
 * the candidate; {@code mode} {@code all} scores 1 when every one is present, {@code any} when one is, and
 * {@code fraction} the share present. The found and missing substrings are kept.
 */
final class ContainsScorer implements BuiltinScorer {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final List<String> inputs;
    private final String mode;
    private final TextNormalizer normalizer;

    ContainsScorer(ScorerOptions options) {
        this.inputs = options.inputs(BuiltinScorers.PAIR);
        this.mode = options.choice("mode", "all", List.of("all", "any", "fraction"));
        this.normalizer = TextNormalizer.caseOnly(options.bool("case_insensitive", false));
    }

    @Override
    public String name() {
        return "contains";
    }

    @Override
    public List<String> inputs() {
        return inputs;
    }

    @Override
    public RowScore score(Map<String, @Nullable Object> row) {
        String candidate = normalizer.apply(RowValues.text(row, inputs.get(0)));
        List<String> expected = expected(RowValues.value(row, inputs.get(1)));
        List<String> found = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (String substring : expected) {
            (candidate.contains(normalizer.apply(substring)) ? found : missing).add(substring);
        }
        double fraction = expected.isEmpty() ? 1.0 : (double) found.size() / expected.size();
        double score = switch (mode) {
            case "any" -> expected.isEmpty() || !found.isEmpty() ? 1 : 0;
            case "fraction" -> fraction;
            default -> missing.isEmpty() ? 1 : 0;
        };
        Map<String, @Nullable Object> metadata = new LinkedHashMap<>();
        metadata.put("fraction", fraction);
        metadata.put("found", found);
        metadata.put("missing", missing);
        return new RowScore(score, metadata);
    }

    private List<String> expected(Object value) {
        if (value instanceof List<?> list) {
            return list.stream().map(String::valueOf).toList();
        }
        String text = String.valueOf(value);
        if (text.strip().startsWith("[")) {
            try {
                JsonNode array = JSON.readTree(text);
                if (array != null && array.isArray()) {
                    List<String> substrings = new ArrayList<>();
                    for (JsonNode element : array) {
                        substrings.add(element.isTextual() ? element.asText() : element.toString());
                    }
                    return substrings;
                }
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                // not a JSON array after all: the text itself is the one substring expected
            }
        }
        return List.of(text);
    }
}
