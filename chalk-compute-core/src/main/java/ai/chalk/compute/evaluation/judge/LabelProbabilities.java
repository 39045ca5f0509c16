package ai.chalk.compute.evaluation.judge;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A JEV reply's probability for every label, read from the token log-probabilities of the position where the
 * chosen label is written ({@code "label":"Y"}): each alternative token there that begins exactly one label adds
 * its probability to that label, and the sums are normalized over the labels. Log-probabilities measure what the
 * model would have written; the self-reported probabilities are what it says, and are used only when the endpoint
 * gives no log-probabilities or none of the alternatives names a label.
 */
final class LabelProbabilities {

    private static final Pattern LABEL_VALUE = Pattern.compile("\"label\"\\s*:\\s*\"");

    private LabelProbabilities() {}

    /** The labels' probabilities from {@code choice.logprobs.content}, or null when it cannot tell. */
    static @Nullable Map<String, Double> fromLogprobs(JsonNode choice, List<String> labels) {
        JsonNode tokens = choice.path("logprobs").path("content");
        if (!tokens.isArray() || tokens.isEmpty()) {
            return null;
        }
        StringBuilder text = new StringBuilder();
        int[] starts = new int[tokens.size()];
        for (int i = 0; i < tokens.size(); i++) {
            starts[i] = text.length();
            text.append(tokens.get(i).path("token").asText(""));
        }
        Matcher matcher = LABEL_VALUE.matcher(text);
        if (!matcher.find()) {
            return null;
        }
        int offset = matcher.end();
        int index = -1;
        for (int i = 0; i < tokens.size(); i++) {
            int end = starts[i] + tokens.get(i).path("token").asText("").length();
            if (starts[i] <= offset && offset < end) {
                index = i;
                break;
            }
        }
        if (index < 0) {
            return null;
        }
        String prefix = text.substring(starts[index], offset);
        Map<String, Double> mass = new LinkedHashMap<>();
        labels.forEach(label -> mass.put(label, 0.0));
        double total = 0;
        JsonNode alternatives = tokens.get(index).path("top_logprobs");
        if (!alternatives.isArray() || alternatives.isEmpty()) {
            return null;
        }
        for (JsonNode alternative : alternatives) {
            String token = alternative.path("token").asText("");
            if (!token.startsWith(prefix) || !alternative.path("logprob").isNumber()) {
                continue;
            }
            String written = token.substring(prefix.length()).replace("\"", "").strip();
            String label = onlyLabelStartingWith(written, labels);
            if (label != null) {
                double p = Math.exp(alternative.path("logprob").asDouble());
                mass.merge(label, p, Double::sum);
                total += p;
            }
        }
        if (total <= 0) {
            return null;
        }
        double sum = total;
        mass.replaceAll((label, p) -> p / sum);
        return mass;
    }

    /** The self-reported probabilities, normalized; null when they are missing or all zero. */
    static @Nullable Map<String, Double> selfReported(JsonNode reported, List<String> labels) {
        Map<String, Double> probabilities = new LinkedHashMap<>();
        double total = 0;
        for (String label : labels) {
            double p = reported.path(label).asDouble(0);
            if (!(p >= 0)) {
                p = 0;
            }
            probabilities.put(label, p);
            total += p;
        }
        if (total <= 0) {
            return null;
        }
        double sum = total;
        probabilities.replaceAll((label, p) -> p / sum);
        return probabilities;
    }

    private static @Nullable String onlyLabelStartingWith(String written, List<String> labels) {
        if (written.isEmpty()) {
            return null;
        }
        if (labels.contains(written)) {
            return written;
        }
        String found = null;
        for (String label : labels) {
            if (label.startsWith(written)) {
                if (found != null) {
                    return null; // the token begins two labels: it says nothing about either
                }
                found = label;
            }
        }
        return found;
    }
}
