package ai.chalk.compute.function.arrow;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * The Java type a column is read and written as when no local definition gives one: the types the standard
 * mapping produces, read back ({@code int32} as {@code Integer}, {@code utf8} as {@code String}, a list as a
 * {@code List}, a map as a {@code Map}, a UTC microsecond timestamp as an {@code Instant}, ...). A struct reads as the
 * class its {@code chalk.java.type} metadata names when the mapping has a custom type for it (a {@code Sandbox}
 * handle, an {@code EvaluationScorerResult}) or when it is a record this JVM can load (the caller shares the
 * function's model classes); other structs have no generic form.
 */
public final class GenericJavaTypes {

    private GenericJavaTypes() {}

    /**
     * The Java type of a field's values.
     *
     * @param field the field
     * @return the type, boxed for primitives
     * @throws IllegalArgumentException when the field's type has no generic Java form, naming the field
     */
    public static Type of(Field field) {
        return of(field, ArrowTypeMapping.standard());
    }

    /**
     * The Java type of a field's values, knowing the custom types of a mapping.
     *
     * @param field   the field
     * @param mapping the mapping whose custom types structs may name
     * @return the type, boxed for primitives
     * @throws IllegalArgumentException when the field's type has no generic Java form, naming the field
     */
    public static Type of(Field field, ArrowTypeMapping mapping) {
        ArrowType type = field.getType();
        return switch (type.getTypeID()) {
            case Bool -> Boolean.class;
            case Int -> integer(field, (ArrowType.Int) type);
            case FloatingPoint -> {
                FloatingPointPrecision precision = ((ArrowType.FloatingPoint) type).getPrecision();
                if (precision == FloatingPointPrecision.HALF) {
                    throw unsupported(field);
                }
                yield precision == FloatingPointPrecision.SINGLE ? Float.class : Double.class;
            }
            case Utf8 -> String.class;
            case Binary -> byte[].class;
            case Date -> {
                if (((ArrowType.Date) type).getUnit() != DateUnit.DAY) {
                    throw unsupported(field);
                }
                yield LocalDate.class;
            }
            case Timestamp -> {
                ArrowType.Timestamp timestamp = (ArrowType.Timestamp) type;
                if (timestamp.getUnit() != TimeUnit.MICROSECOND) {
                    throw unsupported(field);
                }
                if (timestamp.getTimezone() == null) {
                    yield LocalDateTime.class;
                }
                if (!timestamp.getTimezone().equals("UTC")) {
                    throw unsupported(field);
                }
                yield Instant.class;
            }
            case Duration -> {
                if (((ArrowType.Duration) type).getUnit() != TimeUnit.MICROSECOND) {
                    throw unsupported(field);
                }
                yield Duration.class;
            }
            case Decimal -> {
                ArrowType.Decimal decimal = (ArrowType.Decimal) type;
                if (decimal.getBitWidth() != 128
                        || decimal.getPrecision() != ScalarKind.DECIMAL_PRECISION
                        || decimal.getScale() != ScalarKind.DECIMAL_SCALE) {
                    throw unsupported(field);
                }
                yield BigDecimal.class;
            }
            case List -> new Parameterized(List.class, of(field.getChildren().get(0), mapping));
            case Map -> {
                Field entries = field.getChildren().get(0);
                yield new Parameterized(
                        Map.class,
                        of(entries.getChildren().get(0), mapping),
                        of(entries.getChildren().get(1), mapping));
            }
            case Struct -> struct(field, mapping);
            default -> throw unsupported(field);
        };
    }

    private static Type integer(Field field, ArrowType.Int type) {
        if (!type.getIsSigned()) {
            throw unsupported(field);
        }
        return switch (type.getBitWidth()) {
            case 8 -> Byte.class;
            case 16 -> Short.class;
            case 32 -> Integer.class;
            default -> Long.class;
        };
    }

    private static Class<?> struct(Field field, ArrowTypeMapping mapping) {
        Map<String, String> metadata = field.getMetadata() == null ? Map.of() : field.getMetadata();
        Optional<Class<?>> custom = mapping.customType(metadata);
        if (custom.isPresent()) {
            return custom.get();
        }
        String javaType = metadata.get(ChalkMetadata.JAVA_TYPE);
        if (javaType == null) {
            throw unsupported(field);
        }
        try {
            ClassLoader loader = Thread.currentThread().getContextClassLoader();
            Class<?> local =
                    Class.forName(javaType, false, loader != null ? loader : GenericJavaTypes.class.getClassLoader());
            if (local.isRecord()) {
                return local;
            }
        } catch (ClassNotFoundException | LinkageError e) {
            // not shared with this caller: no generic form
        }
        throw new IllegalArgumentException("column '" + field.getName() + "' is a " + javaType
                + " struct, and that record is not on this class path; put the function's model classes on it,"
                + " or call the function with its local FunctionDefinition");
    }

    private static IllegalArgumentException unsupported(Field field) {
        return new IllegalArgumentException("column '" + field.getName() + "' of type " + field.getType()
                + " has no generic Java form; call the function with its local FunctionDefinition");
    }

    /** A generic type such as {@code List<String>}, built at run time. */
    private record Parameterized(Class<?> raw, Type... arguments) implements ParameterizedType {
        @Override
        public Type[] getActualTypeArguments() {
            return arguments.clone();
        }

        @Override
        public Type getRawType() {
            return raw;
        }

        @Override
        public Type getOwnerType() {
            return null;
        }

        @Override
        public String toString() {
            return raw.getName() + Arrays.toString(arguments);
        }
    }
}
