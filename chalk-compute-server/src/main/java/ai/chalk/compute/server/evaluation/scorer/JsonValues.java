package ai.chalk.compute.server.evaluation.scorer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import java.util.Comparator;
import org.jspecify.annotations.Nullable;

/**
 * JSON as the JSON scorers read it: one value per text (trailing content is an error), Jackson's limits on nesting
 * depth and sizes against hostile input, and equality that treats {@code 1} and {@code 1.0} as the same number.
 */
final class JsonValues {

    private static final ObjectReader READER = new ObjectMapper()
            .readerFor(JsonNode.class)
            .with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

    private static final Comparator<JsonNode> NUMBERS_BY_VALUE = (x, y) -> {
        if (x.isNumber() && y.isNumber()) {
            return x.decimalValue().compareTo(y.decimalValue());
        }
        return x.equals(y) ? 0 : 1;
    };

    private JsonValues() {}

    static JsonNode parse(String text) throws JsonProcessingException {
        if (text.isBlank()) {
            throw new com.fasterxml.jackson.core.JsonParseException(null, "no JSON value: the text is empty");
        }
        return READER.readValue(text);
    }

    static boolean same(@Nullable JsonNode a, @Nullable JsonNode b) {
        if (a == null || b == null) {
            return a == b;
        }
        return a.equals(NUMBERS_BY_VALUE, b);
    }

    /** The value at a dotted path ({@code answer.items.0.name}; a number indexes an array), or null if absent. */
    static @Nullable JsonNode at(JsonNode root, String path) {
        JsonNode node = root;
        for (String segment : path.split("\\.", -1)) {
            if (node == null) {
                return null;
            }
            if (node.isArray()) {
                node = isIndex(segment) ? node.get(Integer.parseInt(segment)) : null;
            } else if (node.isObject()) {
                node = node.get(segment);
            } else {
                return null;
            }
        }
        return node;
    }

    private static boolean isIndex(String segment) {
        return !segment.isEmpty() && segment.length() < 10 && segment.chars().allMatch(Character::isDigit);
    }
}
