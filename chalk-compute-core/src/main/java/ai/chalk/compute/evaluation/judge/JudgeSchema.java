package ai.chalk.compute.evaluation.judge;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Status;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A grade record as a JSON schema for structured outputs (an object with every component required and nothing
 * else, types, ranges and descriptions from {@link JudgeField}), and the check of a reply against it that builds the
 * record. Components may be {@code String}, {@code boolean}, integer and floating-point numbers, enums, and lists of
 * those; the record must have a numeric {@code score}.
 *
 * @param <T> the record type
 */
final class JudgeSchema<T extends Record> {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Class<T> type;
    private final RecordComponent[] components;
    private final Constructor<T> constructor;
    private final ObjectNode schema;

    JudgeSchema(Class<T> type) {
        if (!type.isRecord()) {
            throw new IllegalArgumentException("a judge's grade is a record; " + type.getName() + " is not one");
        }
        this.type = type;
        this.components = type.getRecordComponents();
        RecordComponent score = null;
        for (RecordComponent component : components) {
            if (component.getName().equals("score")) {
                score = component;
            }
        }
        if (score == null || !isNumber(score.getType())) {
            throw new IllegalArgumentException(
                    type.getSimpleName() + " needs a numeric component named score: it becomes the row's score");
        }
        Class<?>[] types = new Class<?>[components.length];
        for (int i = 0; i < components.length; i++) {
            types[i] = components[i].getType();
        }
        try {
            this.constructor = type.getDeclaredConstructor(types);
            this.constructor.setAccessible(true);
        } catch (ReflectiveOperationException | SecurityException e) {
            throw new IllegalArgumentException("cannot use the canonical constructor of " + type.getName(), e);
        }
        this.schema = JSON.createObjectNode();
        schema.put("type", "object");
        ObjectNode properties = schema.putObject("properties");
        ArrayNode required = schema.putArray("required");
        for (RecordComponent component : components) {
            ObjectNode property = valueSchema(component.getGenericType(), component.getName());
            JudgeField field = component.getAnnotation(JudgeField.class);
            if (field != null) {
                if (!field.description().isEmpty()) {
                    property.put("description", field.description());
                }
                if (field.min() != Double.NEGATIVE_INFINITY || field.max() != Double.POSITIVE_INFINITY) {
                    if (!isNumber(component.getType())) {
                        throw new IllegalArgumentException(type.getSimpleName() + "." + component.getName()
                                + " has a range, but only numbers have one");
                    }
                    if (field.min() > field.max()) {
                        throw new IllegalArgumentException(type.getSimpleName() + "." + component.getName()
                                + " has min " + field.min() + " above max " + field.max());
                    }
                    putBound(property, "minimum", field.min());
                    putBound(property, "maximum", field.max());
                }
            }
            properties.set(component.getName(), property);
            required.add(component.getName());
        }
        schema.put("additionalProperties", false);
    }

    /** The JSON schema, a fresh copy. */
    ObjectNode schema() {
        return schema.deepCopy();
    }

    /** The record's simple name. */
    Class<T> type() {
        return type;
    }

    String typeName() {
        return type.getSimpleName();
    }

    /**
     * Checks a reply against the schema and builds the record.
     *
     * @throws JudgeException INVALID_ARGUMENT naming the component when the reply does not fit
     */
    T read(JsonNode reply) {
        if (!reply.isObject()) {
            throw malformed("the reply is not a JSON object");
        }
        List<String> extra = new ArrayList<>();
        for (Iterator<String> names = reply.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!schema.path("properties").has(name)) {
                extra.add(name);
            }
        }
        if (!extra.isEmpty()) {
            throw malformed("the reply has fields the grade does not: " + extra);
        }
        Object[] values = new Object[components.length];
        for (int i = 0; i < components.length; i++) {
            RecordComponent component = components[i];
            JsonNode value = reply.get(component.getName());
            if (value == null || value.isNull()) {
                throw malformed("the reply has no " + component.getName());
            }
            values[i] = convert(value, component.getGenericType(), component.getName());
            JudgeField field = component.getAnnotation(JudgeField.class);
            if (field != null && values[i] instanceof Number number) {
                double d = number.doubleValue();
                if (d < field.min() || d > field.max()) {
                    throw malformed(component.getName() + " is " + value + ", outside " + range(field));
                }
            }
        }
        try {
            return constructor.newInstance(values);
        } catch (InvocationTargetException e) {
            throw malformed(typeName() + " refused the reply: " + e.getCause().getMessage());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot build " + type.getName(), e);
        }
    }

    /** Checks a grade a parse function built, as if it had come as JSON. */
    T check(T grade) {
        return read(JSON.valueToTree(values(grade)));
    }

    /** The score component's value. */
    double score(T grade) {
        return ((Number) values(grade).get("score")).doubleValue();
    }

    /** Every component but the score, by name; enums by name. */
    Map<String, Object> metadata(T grade) {
        Map<String, Object> metadata = values(grade);
        metadata.remove("score");
        return metadata;
    }

    private Map<String, Object> values(T grade) {
        Map<String, Object> values = new LinkedHashMap<>();
        for (RecordComponent component : components) {
            try {
                Object value = component.getAccessor().invoke(grade);
                values.put(component.getName(), plain(value));
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot read " + component.getName() + " of " + type.getName(), e);
            }
        }
        return values;
    }

    private static @Nullable Object plain(@Nullable Object value) {
        if (value instanceof Enum<?> e) {
            return e.name();
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(element -> copy.add(plain(element)));
            return copy;
        }
        return value;
    }

    private ObjectNode valueSchema(Type type, String name) {
        ObjectNode property = JSON.createObjectNode();
        Class<?> raw = raw(type);
        if (raw == String.class) {
            property.put("type", "string");
        } else if (raw == boolean.class || raw == Boolean.class) {
            property.put("type", "boolean");
        } else if (isInteger(raw)) {
            property.put("type", "integer");
        } else if (raw == double.class || raw == Double.class || raw == float.class || raw == Float.class) {
            property.put("type", "number");
        } else if (raw.isEnum()) {
            property.put("type", "string");
            ArrayNode values = property.putArray("enum");
            for (Object constant : raw.getEnumConstants()) {
                values.add(((Enum<?>) constant).name());
            }
        } else if (raw == List.class && type instanceof ParameterizedType list) {
            property.put("type", "array");
            property.set("items", valueSchema(list.getActualTypeArguments()[0], name + "[]"));
        } else {
            throw new IllegalArgumentException(this.type.getSimpleName() + "." + name + " is a " + type.getTypeName()
                    + "; a grade's components are strings, booleans, numbers, enums and lists of them");
        }
        return property;
    }

    private Object convert(JsonNode value, Type type, String name) {
        Class<?> raw = raw(type);
        if (raw == String.class) {
            if (!value.isTextual()) {
                throw malformed(name + " should be a string, not " + value);
            }
            return value.asText();
        }
        if (raw == boolean.class || raw == Boolean.class) {
            if (!value.isBoolean()) {
                throw malformed(name + " should be true or false, not " + value);
            }
            return value.booleanValue();
        }
        if (isInteger(raw)) {
            if (!value.isIntegralNumber()
                    && !(value.isNumber() && value.doubleValue() == Math.rint(value.doubleValue()))) {
                throw malformed(name + " should be an integer, not " + value);
            }
            long l = value.asLong();
            if (raw == int.class || raw == Integer.class) {
                if (l != (int) l) {
                    throw malformed(name + " is " + value + ", too large for an int");
                }
                return (int) l;
            }
            return l;
        }
        if (raw == double.class || raw == Double.class || raw == float.class || raw == Float.class) {
            if (!value.isNumber()) {
                throw malformed(name + " should be a number, not " + value);
            }
            return raw == float.class || raw == Float.class ? (Object) value.floatValue() : value.doubleValue();
        }
        if (raw.isEnum()) {
            if (value.isTextual()) {
                for (Object constant : raw.getEnumConstants()) {
                    if (((Enum<?>) constant).name().equals(value.asText())) {
                        return constant;
                    }
                }
            }
            throw malformed(name + " should be one of "
                    + schema.path("properties").path(name).path("enum") + ", not " + value);
        }
        if (!value.isArray()) {
            throw malformed(name + " should be a list, not " + value);
        }
        Type element = ((ParameterizedType) type).getActualTypeArguments()[0];
        List<Object> list = new ArrayList<>();
        int i = 0;
        for (JsonNode item : value) {
            list.add(convert(item, element, name + "[" + i++ + "]"));
        }
        return List.copyOf(list);
    }

    private JudgeException malformed(String why) {
        return new JudgeException(Status.Code.INVALID_ARGUMENT, "malformed " + typeName() + " grade: " + why);
    }

    private static void putBound(ObjectNode property, String name, double bound) {
        if (Double.isFinite(bound)) {
            if (bound == Math.rint(bound) && Math.abs(bound) <= Integer.MAX_VALUE) {
                property.put(name, (int) bound); // written 0, not 0.0, as a JSON schema author would
            } else if (bound == Math.rint(bound) && Math.abs(bound) < 1e15) {
                property.put(name, (long) bound);
            } else {
                property.put(name, bound);
            }
        }
    }

    private static String range(JudgeField field) {
        return "[" + (Double.isFinite(field.min()) ? trim(field.min()) : "-inf") + ", "
                + (Double.isFinite(field.max()) ? trim(field.max()) : "inf") + "]";
    }

    private static String trim(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }

    private static Class<?> raw(Type type) {
        if (type instanceof Class<?> c) {
            return c;
        }
        if (type instanceof ParameterizedType p && p.getRawType() instanceof Class<?> c) {
            return c;
        }
        return Object.class;
    }

    private static boolean isInteger(Class<?> raw) {
        return raw == int.class || raw == Integer.class || raw == long.class || raw == Long.class;
    }

    private static boolean isNumber(Class<?> raw) {
        return isInteger(raw) || raw == double.class || raw == Double.class || raw == float.class || raw == Float.class;
    }
}
