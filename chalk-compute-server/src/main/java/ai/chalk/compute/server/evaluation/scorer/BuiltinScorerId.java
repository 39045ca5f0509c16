package ai.chalk.compute.server.evaluation.scorer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A built-in scorer's id as it travels in {@code chalk.evaluation.v1.BuiltinScorer.id}: the name alone
 * ({@code exact_match}) or the name, a colon and its options as a JSON object
 * ({@code exact_match:{"case_insensitive":true}}), because the contract has no field for options and an evaluation
 * must pin them with the scorer.
 *
 * @param name    the built-in's name
 * @param options its options, an empty object for the defaults
 */
public record BuiltinScorerId(String name, ObjectNode options) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Reads an id.
     *
     * @param id the id from the wire
     * @return the name and options
     * @throws IllegalArgumentException when the options are not a JSON object
     */
    public static BuiltinScorerId parse(String id) {
        int colon = id.indexOf(':');
        String name = (colon < 0 ? id : id.substring(0, colon)).strip();
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a built-in scorer id starts with the scorer's name, such as "
                    + "exact_match; got '" + abbreviate(id) + "'");
        }
        if (colon < 0) {
            return new BuiltinScorerId(name, JSON.createObjectNode());
        }
        JsonNode options;
        try {
            options = JSON.readTree(id.substring(colon + 1));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(
                    "the options of built-in scorer " + name + " are not valid JSON: " + e.getOriginalMessage());
        }
        if (options == null || !options.isObject()) {
            throw new IllegalArgumentException("the options of built-in scorer " + name
                    + " must be a JSON object, such as {\"case_insensitive\":true}");
        }
        return new BuiltinScorerId(name, (ObjectNode) options);
    }

    private static String abbreviate(String text) {
        return text.length() <= 80 ? text : text.substring(0, 80) + "...";
    }
}
