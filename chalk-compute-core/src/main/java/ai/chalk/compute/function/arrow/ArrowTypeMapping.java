package ai.chalk.compute.function.arrow;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Type;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * Which Arrow field describes values of a Java type. Immutable and thread-safe.
 *
 * <table>
 *   <caption>The standard mapping</caption>
 *   <tr><th>Java</th><th>Arrow</th></tr>
 *   <tr><td>{@code boolean}, {@code Boolean}</td><td>bool</td></tr>
 *   <tr><td>{@code byte}, {@code short}, {@code int}, {@code long} and boxes</td><td>int8, int16, int32, int64</td></tr>
 *   <tr><td>{@code float}, {@code double} and boxes</td><td>float32, float64</td></tr>
 *   <tr><td>{@code String}</td><td>utf8</td></tr>
 *   <tr><td>{@code byte[]}</td><td>binary</td></tr>
 *   <tr><td>an enum</td><td>utf8 holding the constant's name; metadata {@link ChalkMetadata#JAVA_TYPE} and {@link ChalkMetadata#ENUM_CONSTANTS}</td></tr>
 *   <tr><td>a record</td><td>struct with one child per component, in order; metadata {@link ChalkMetadata#JAVA_TYPE}</td></tr>
 *   <tr><td>{@code List<T>}</td><td>list with element field {@code item}</td></tr>
 *   <tr><td>{@code Map<K, V>}</td><td>map of {@code entries} struct with {@code key} (never null) and {@code value}</td></tr>
 *   <tr><td>{@code Optional<T>}, {@code OptionalInt}, {@code OptionalLong}, {@code OptionalDouble}</td><td>T, nullable</td></tr>
 *   <tr><td>{@code Instant}</td><td>timestamp[us, tz=UTC] (nanoseconds are rounded down to microseconds)</td></tr>
 *   <tr><td>{@code LocalDateTime}</td><td>timestamp[us] without time zone</td></tr>
 *   <tr><td>{@code LocalDate}</td><td>date32[day]</td></tr>
 *   <tr><td>{@code Duration}</td><td>duration[us]</td></tr>
 *   <tr><td>{@code BigDecimal}</td><td>decimal128(38, 18); more than 18 decimal places is an error, never rounding</td></tr>
 *   <tr><td>{@code Sandbox}</td><td>struct {@code {sandbox_id: large_utf8}}, not nullable; metadata
 *       {@code chalk.python.type=chalkcompute.Sandbox}</td></tr>
 *   <tr><td>{@code EvaluationScorerResult}</td><td>struct {@code {score: float64, metadata: utf8 JSON}}, not nullable</td></tr>
 * </table>
 *
 * <p>Primitives are never null; every other type may be, except custom types such as {@code Sandbox},
 * which are nullable only inside an {@code Optional}. Records must not have type parameters or contain
 * themselves. Anything else ({@code Object}, arrays other than {@code byte[]}, classes that are not
 * records) has no mapping: describe it with a {@link CustomArrowType}.
 *
 * <p>Decoding is more lenient than this table, so that payloads from callers in other languages read:
 * {@code large_utf8}, {@code large_binary}, {@code large_list}, other integer widths (when the value fits),
 * other time units and {@code date64} all read into the Java types above.
 */
public final class ArrowTypeMapping {

    private static final ArrowTypeMapping STANDARD =
            new ArrowTypeMapping(List.of(new SandboxArrowType(), new ScorerResultArrowType()));

    private final Map<Class<?>, CustomArrowType<?, ?>> customTypes;
    private final TypeResolver resolver;

    private ArrowTypeMapping(List<CustomArrowType<?, ?>> customTypes) {
        Map<Class<?>, CustomArrowType<?, ?>> byClass = new LinkedHashMap<>();
        for (CustomArrowType<?, ?> type : customTypes) {
            byClass.put(type.javaType(), type);
        }
        this.customTypes = byClass;
        this.resolver = new TypeResolver(byClass);
    }

    /** The mapping described above, with the SDK's own custom types. */
    public static ArrowTypeMapping standard() {
        return STANDARD;
    }

    /**
     * This mapping plus a custom type.
     *
     * @param type how to carry values of one more Java class
     * @return a new mapping
     * @throws IllegalArgumentException when this mapping already has a custom type for that class
     */
    public ArrowTypeMapping with(CustomArrowType<?, ?> type) {
        Objects.requireNonNull(type, "type");
        if (customTypes.containsKey(type.javaType())) {
            throw new IllegalArgumentException("the mapping already has a custom type for "
                    + type.javaType().getName());
        }
        List<CustomArrowType<?, ?>> all = new java.util.ArrayList<>(customTypes.values());
        all.add(type);
        return new ArrowTypeMapping(all);
    }

    /**
     * The Java class of the custom type a field's metadata identifies, if this mapping has one: by
     * {@link ChalkMetadata#JAVA_TYPE}, or by the custom type's own identifying metadata (so a sandbox returned by a
     * function in another language, tagged {@code chalk.python.type=chalkcompute.Sandbox}, is recognised too).
     */
    Optional<Class<?>> customType(Map<String, String> fieldMetadata) {
        String javaType = fieldMetadata.get(ChalkMetadata.JAVA_TYPE);
        return customTypes.values().stream()
                .filter(t -> t.javaType().getName().equals(javaType)
                        || (!t.metadata().isEmpty()
                                && fieldMetadata
                                        .entrySet()
                                        .containsAll(t.metadata().entrySet())))
                .<Class<?>>map(CustomArrowType::javaType)
                .findFirst();
    }

    /**
     * The field that carries values of a Java type.
     *
     * @param name     the field's name
     * @param javaType the declared type, generic arguments included (a {@code Method}'s generic parameter type)
     * @return the field
     * @throws UnsupportedJavaTypeException when the type, or a type inside it, has no mapping
     */
    public Field field(String name, Type javaType) {
        return field(name, javaType, Map.of());
    }

    /**
     * The field that carries values of a Java type, with extra metadata on the field itself.
     *
     * @param name     the field's name
     * @param javaType the declared type
     * @param metadata metadata to add, for example {@link ChalkMetadata#DEFAULT}
     * @return the field
     * @throws UnsupportedJavaTypeException when the type, or a type inside it, has no mapping
     */
    public Field field(String name, Type javaType, Map<String, String> metadata) {
        return FieldFactory.field(name, resolve(javaType), metadata);
    }

    /**
     * Checks that a parameter default, as written in {@link ai.chalk.compute.function.Default}, is a value of a Java
     * type, and returns it as compact JSON. It is JSON (times as ISO-8601 strings, bytes as base64 strings, records
     * as objects by component name), except for a type whose values are text (strings, enum constants, times,
     * bytes): its default is the text as written, {@code -} for {@code "-"}; the JSON string form is understood too,
     * and {@code null} means null where the type allows it.
     *
     * @param json     the default as written
     * @param javaType the declared type
     * @return the value as compact JSON
     * @throws IllegalArgumentException when it is not a value of the type; the message says why and how to write one
     */
    public String canonicalJson(String json, Type javaType) {
        return DefaultText.read(json, resolve(javaType)).toString();
    }

    ValueType resolve(Type javaType) {
        return resolver.resolve(Objects.requireNonNull(javaType, "javaType"));
    }

    static JsonNode parse(String json) {
        try {
            JsonNode node = Json.MAPPER.readTree(json);
            if (node == null || node.isMissingNode()) {
                throw new IllegalArgumentException("'" + json + "' is not valid JSON: it is empty");
            }
            return node;
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("'" + json + "' is not valid JSON: " + e.getOriginalMessage(), e);
        }
    }
}
