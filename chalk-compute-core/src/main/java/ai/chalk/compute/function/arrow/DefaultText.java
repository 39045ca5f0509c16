package ai.chalk.compute.function.arrow;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * How a parameter default is written in {@code @Default}: JSON, except that a parameter whose values are text
 * (strings, enum constants, times, bytes) takes its value as written, {@code @Default("-")}, so that nobody has to
 * quote a string inside a Java string. When the text is not a value of the type, the message says how to write one,
 * with an example for that very type, and never quotes the JSON parser's own words.
 */
final class DefaultText {

    /** Kinds whose JSON form is a string, so whose default may be written without JSON quotes. */
    private static final Set<ScalarKind> TEXTUAL = EnumSet.of(
            ScalarKind.STRING,
            ScalarKind.BYTES,
            ScalarKind.INSTANT,
            ScalarKind.LOCAL_DATE_TIME,
            ScalarKind.LOCAL_DATE,
            ScalarKind.DURATION);

    private DefaultText() {}

    /**
     * The JSON value a default's text stands for.
     *
     * @throws IllegalArgumentException when it stands for no value of the type, saying how to write one
     */
    static JsonNode read(String text, ValueType type) {
        JsonNode node = node(text, type);
        try {
            JsonValues.fromJson(node, type, "");
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + "; " + hint(type), e);
        }
        return node;
    }

    private static JsonNode node(String text, ValueType type) {
        ValueType content = type instanceof ValueType.OptionalType o ? o.content() : type;
        if (isTextual(content)) {
            if (text.equals("null") && type.nullable()) {
                return NullNode.getInstance();
            }
            if (text.length() >= 2 && text.startsWith("\"") && text.endsWith("\"")) {
                // the JSON form, "\"-\"", is still understood
                try {
                    JsonNode quoted = Json.MAPPER.readTree(text);
                    if (quoted != null && quoted.isTextual()) {
                        return quoted;
                    }
                } catch (JsonProcessingException e) {
                    // not JSON after all: the text as written
                }
            }
            return TextNode.valueOf(text);
        }
        try {
            JsonNode node = Json.MAPPER.readTree(text);
            if (node != null && !node.isMissingNode()) {
                return node;
            }
        } catch (JsonProcessingException e) {
            // reported below, in the user's terms rather than the parser's
        }
        throw new IllegalArgumentException(
                (text.isBlank() ? "it is empty" : "'" + text + "' is not JSON") + "; " + hint(type));
    }

    private static boolean isTextual(ValueType type) {
        return type instanceof ValueType.EnumType || (type instanceof ValueType.Scalar s && TEXTUAL.contains(s.kind()));
    }

    /** "write a default of type int as JSON: a whole number, such as @Default("10")". */
    static String hint(ValueType type) {
        String name = TypeNames.simple(type.javaType());
        ValueType content = type instanceof ValueType.OptionalType o ? o.content() : type;
        String nullable = type.nullable() ? " (or null)" : "";
        if (content instanceof ValueType.CustomType) {
            return "a parameter of type " + name + " cannot have a default; leave @Default out";
        }
        if (isTextual(content)) {
            String form = form(content);
            return "write a default of type " + name + " as the text itself" + (form.isEmpty() ? "" : ": " + form)
                    + nullable + ", such as @Default(\"" + javaString(plainExample(content)) + "\")";
        }
        return "write a default of type " + name + " as JSON: " + form(content) + nullable + ", such as @Default(\""
                + javaString(example(content)) + "\")";
    }

    private static String form(ValueType type) {
        if (type instanceof ValueType.Scalar s) {
            return switch (s.kind()) {
                case BOOLEAN -> "true or false";
                case BYTE, SHORT, INT, LONG -> "a whole number";
                case FLOAT, DOUBLE, DECIMAL -> "a number";
                case STRING -> "";
                case BYTES -> "base64";
                case INSTANT, LOCAL_DATE_TIME, LOCAL_DATE, DURATION -> "ISO-8601";
            };
        }
        if (type instanceof ValueType.EnumType) {
            return "a constant's name";
        }
        if (type instanceof ValueType.ListType) {
            return "an array";
        }
        if (type instanceof ValueType.RecordType) {
            return "an object with its components";
        }
        if (type instanceof ValueType.MapType) {
            return "an object";
        }
        return "a value of the type";
    }

    /** A default's text for a textual type, as written in {@code @Default}. */
    private static String plainExample(ValueType type) {
        JsonNode node = exampleNode(type);
        return node.isTextual() ? node.textValue() : node.toString();
    }

    /** A JSON example of the type. */
    private static String example(ValueType type) {
        return exampleNode(type).toString();
    }

    private static JsonNode exampleNode(ValueType type) {
        try {
            return Json.MAPPER.readTree(exampleJson(type));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("bad example for " + type, e);
        }
    }

    private static String exampleJson(ValueType type) {
        return exampleJson(type, 0);
    }

    private static String exampleJson(ValueType type, int depth) {
        if (depth > 3) {
            return "null"; // a record that holds itself: an example need not go on
        }
        if (type instanceof ValueType.OptionalType o) {
            return exampleJson(o.content(), depth);
        }
        if (type instanceof ValueType.Scalar s) {
            return switch (s.kind()) {
                case BOOLEAN -> "true";
                case BYTE, SHORT, INT, LONG -> "10";
                case FLOAT, DOUBLE -> "0.5";
                case DECIMAL -> "12.50";
                case STRING -> "\"-\"";
                case BYTES -> "\"aGVsbG8=\"";
                case INSTANT -> "\"2024-05-01T12:00:00Z\"";
                case LOCAL_DATE_TIME -> "\"2024-05-01T12:00:00\"";
                case LOCAL_DATE -> "\"2024-05-01\"";
                case DURATION -> "\"PT30S\"";
            };
        }
        if (type instanceof ValueType.EnumType e) {
            Object[] constants = e.javaType().getEnumConstants();
            return constants.length == 0 ? "null" : "\"" + ((Enum<?>) constants[0]).name() + "\"";
        }
        if (type instanceof ValueType.ListType l) {
            return "[" + exampleJson(l.element(), depth + 1) + "]";
        }
        if (type instanceof ValueType.MapType m) {
            String key = exampleJson(m.key(), depth + 1);
            return "{" + (key.startsWith("\"") ? key : "\"" + key + "\"") + ":" + exampleJson(m.value(), depth + 1)
                    + "}";
        }
        if (type instanceof ValueType.RecordType r) {
            return r.components().stream()
                    .map(c -> "\"" + c.name() + "\":" + exampleJson(c.type(), depth + 1))
                    .collect(Collectors.joining(",", "{", "}"));
        }
        return "null";
    }

    /** The text as a Java string literal's content. */
    private static String javaString(String text) {
        return text.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
