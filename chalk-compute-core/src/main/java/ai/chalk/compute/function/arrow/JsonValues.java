package ai.chalk.compute.function.arrow;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.InvocationTargetException;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * Turns JSON, as parameter defaults are published in {@link ChalkMetadata#DEFAULT}, into Java values of
 * a declared type. Times are ISO-8601 strings, bytes are base64 strings, records are objects by
 * component name, map keys are the object's keys.
 */
final class JsonValues {

    private JsonValues() {}

    /**
     * The value the JSON describes.
     *
     * @throws IllegalArgumentException when it does not describe a value of the type; the message says why
     */
    static Object fromJson(JsonNode node, ValueType type, String path) {
        if (type instanceof ValueType.OptionalType o) {
            Object content = node.isNull() ? null : fromJson(node, o.content(), path);
            if (o.javaType() == OptionalInt.class) {
                return content == null ? OptionalInt.empty() : OptionalInt.of((Integer) content);
            }
            if (o.javaType() == OptionalLong.class) {
                return content == null ? OptionalLong.empty() : OptionalLong.of((Long) content);
            }
            if (o.javaType() == OptionalDouble.class) {
                return content == null ? OptionalDouble.empty() : OptionalDouble.of((Double) content);
            }
            return Optional.ofNullable(content);
        }
        if (node.isNull()) {
            if (!type.nullable()) {
                throw invalid(path, "null", type);
            }
            return null;
        }
        if (type instanceof ValueType.Scalar s) {
            return scalar(node, s, path);
        }
        if (type instanceof ValueType.EnumType e) {
            if (node.isTextual()) {
                for (Object constant : e.constants()) {
                    if (((Enum<?>) constant).name().equals(node.textValue())) {
                        return constant;
                    }
                }
            }
            throw new IllegalArgumentException(at(path) + node + " is not one of " + Arrays.toString(e.constants()));
        }
        if (type instanceof ValueType.RecordType r) {
            return record(node, r, path);
        }
        if (type instanceof ValueType.ListType l) {
            if (!node.isArray()) {
                throw invalid(path, node.toString(), type);
            }
            List<Object> list = new ArrayList<>();
            for (int i = 0; i < node.size(); i++) {
                list.add(fromJson(node.get(i), l.element(), path + "[" + i + "]"));
            }
            return list;
        }
        if (type instanceof ValueType.MapType m) {
            if (!node.isObject()) {
                throw invalid(path, node.toString(), type);
            }
            Map<Object, Object> map = new LinkedHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> entry = it.next();
                Object key = fromJson(keyNode(entry.getKey(), m.key()), m.key(), path + "{key}");
                map.put(key, fromJson(entry.getValue(), m.value(), path + "{" + entry.getKey() + "}"));
            }
            return map;
        }
        throw new IllegalArgumentException(
                at(path) + TypeNames.simple(type.javaType()) + " has no JSON form for a default");
    }

    /** JSON object keys are strings; a number key is read as the number it spells. */
    private static JsonNode keyNode(String key, ValueType keyType) {
        if (keyType instanceof ValueType.Scalar s
                && (s.kind().isInteger() || s.kind().isFloatingPoint() || s.kind() == ScalarKind.DECIMAL)) {
            try {
                return com.fasterxml.jackson.databind.node.DecimalNode.valueOf(new BigDecimal(key));
            } catch (NumberFormatException e) {
                return com.fasterxml.jackson.databind.node.TextNode.valueOf(key);
            }
        }
        return com.fasterxml.jackson.databind.node.TextNode.valueOf(key);
    }

    private static Object scalar(JsonNode node, ValueType.Scalar type, String path) {
        ScalarKind kind = type.kind();
        if (kind == ScalarKind.BOOLEAN && node.isBoolean()) {
            return node.booleanValue();
        }
        if (kind.isInteger() && node.isNumber()) {
            BigDecimal exact = node.decimalValue();
            try {
                long value = exact.longValueExact();
                return switch (kind) {
                    case BYTE ->
                        Math.toIntExact(value) == (byte) value ? (Object) (byte) value : outOfRange(node, path, type);
                    case SHORT ->
                        Math.toIntExact(value) == (short) value ? (Object) (short) value : outOfRange(node, path, type);
                    case INT -> Math.toIntExact(value);
                    default -> value;
                };
            } catch (ArithmeticException e) {
                return outOfRange(node, path, type);
            }
        }
        if (kind == ScalarKind.FLOAT && node.isNumber()) {
            return node.floatValue();
        }
        if (kind == ScalarKind.DOUBLE && node.isNumber()) {
            return node.doubleValue();
        }
        if (kind == ScalarKind.DECIMAL && (node.isNumber() || node.isTextual())) {
            try {
                return node.isNumber() ? node.decimalValue() : new BigDecimal(node.textValue());
            } catch (NumberFormatException e) {
                throw invalid(path, node.toString(), type);
            }
        }
        if (node.isTextual()) {
            String text = node.textValue();
            try {
                switch (kind) {
                    case STRING:
                        return text;
                    case BYTES:
                        return node.binaryValue();
                    case INSTANT:
                        return Instant.parse(text);
                    case LOCAL_DATE_TIME:
                        return LocalDateTime.parse(text);
                    case LOCAL_DATE:
                        return LocalDate.parse(text);
                    case DURATION:
                        return Duration.parse(text);
                    default:
                        break;
                }
            } catch (DateTimeParseException | java.io.IOException e) {
                throw new IllegalArgumentException(
                        at(path) + node + " is not a value of type " + TypeNames.simple(type.javaType())
                                + (kind == ScalarKind.BYTES
                                        ? " (write bytes in base64)"
                                        : " (write times in ISO-8601)"),
                        e);
            }
        }
        throw invalid(path, node.toString(), type);
    }

    private static Object outOfRange(JsonNode node, String path, ValueType type) {
        throw new IllegalArgumentException(
                at(path) + node + " is not a whole number that fits in " + TypeNames.simple(type.javaType()));
    }

    private static Object record(JsonNode node, ValueType.RecordType type, String path) {
        if (!node.isObject()) {
            throw invalid(path, node.toString(), type);
        }
        Object[] values = new Object[type.components().size()];
        for (int i = 0; i < values.length; i++) {
            ValueType.Component component = type.components().get(i);
            JsonNode value = node.get(component.name());
            values[i] = fromJson(
                    value == null ? com.fasterxml.jackson.databind.node.NullNode.getInstance() : value,
                    component.type(),
                    path + "." + component.name());
        }
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (type.components().stream().noneMatch(c -> c.name().equals(name))) {
                throw new IllegalArgumentException(
                        at(path) + TypeNames.simple(type.javaType()) + " has no component '" + name + "'");
            }
        }
        try {
            return type.constructor().newInstance(values);
        } catch (InvocationTargetException e) {
            throw new IllegalArgumentException(
                    at(path) + TypeNames.simple(type.javaType()) + " rejected it: "
                            + e.getCause().getMessage(),
                    e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    "cannot construct " + type.javaType().getName(), e);
        }
    }

    private static IllegalArgumentException invalid(String path, String json, ValueType type) {
        return new IllegalArgumentException(
                at(path) + json + " is not a value of type " + TypeNames.simple(type.javaType()));
    }

    private static String at(String path) {
        return path.isEmpty() ? "" : path + ": ";
    }
}
