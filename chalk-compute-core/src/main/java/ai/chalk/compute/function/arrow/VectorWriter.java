package ai.chalk.compute.function.arrow;

import java.lang.reflect.InvocationTargetException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DateMilliVector;
import org.apache.arrow.vector.Decimal256Vector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.DurationVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.LargeVarBinaryVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.UInt2Vector;
import org.apache.arrow.vector.UInt4Vector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.ViewVarBinaryVector;
import org.apache.arrow.vector.ViewVarCharVector;
import org.apache.arrow.vector.complex.LargeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;

/**
 * Writes Java values into Arrow vectors. The vector decides the exact Arrow type, so values go equally
 * into the schemas this SDK makes and into another caller's (say, {@code large_utf8} and {@code int64}
 * where Java declared {@code String} and {@code int}); numbers that do not fit are refused, never cut.
 */
final class VectorWriter {

    private VectorWriter() {}

    /**
     * Writes one value.
     *
     * @param vector the vector, with capacity managed by this method
     * @param index  the slot to write
     * @param value  the value, possibly {@code null}
     * @param type   its declared type
     * @param where  where it is, for messages
     * @throws ArrowPayloadException when the value cannot be written there
     */
    static void write(FieldVector vector, int index, Object value, ValueType type, Location where) {
        if (type instanceof ValueType.OptionalType o) {
            write(vector, index, unwrap(value, o, where), o.content(), where);
            return;
        }
        if (value == null) {
            if (!vector.getField().isNullable()) {
                throw new ArrowPayloadException(where + ": null in a non-nullable field of type " + describe(vector)
                        + (!(type instanceof ValueType.CustomType)
                                ? ""
                                : "; declare Optional<" + TypeNames.simple(type.javaType())
                                        + "> for a value that may be absent"));
            }
            vector.setNull(index);
            return;
        }
        if (type instanceof ValueType.Scalar s) {
            writeScalar(vector, index, expect(value, s, where), s.kind(), where);
        } else if (type instanceof ValueType.EnumType e) {
            writeScalar(vector, index, ((Enum<?>) expect(value, e, where)).name(), ScalarKind.STRING, where);
        } else if (type instanceof ValueType.RecordType r) {
            writeRecord(vector, index, expect(value, r, where), r, where);
        } else if (type instanceof ValueType.ListType l) {
            writeList(vector, index, (List<?>) expectClass(value, List.class, l, where), l, where);
        } else if (type instanceof ValueType.MapType m) {
            writeMap(vector, index, (Map<?, ?>) expectClass(value, Map.class, m, where), m, where);
        } else {
            ValueType.CustomType c = (ValueType.CustomType) type;
            write(vector, index, toStorage(c.codec(), expect(value, c, where), where), c.storage(), where);
        }
    }

    private static Object unwrap(Object value, ValueType.OptionalType type, Location where) {
        if (value == null) {
            return null; // an absent Optional written as null is what the caller meant
        }
        if (value instanceof Optional<?> o) {
            return o.orElse(null);
        }
        if (value instanceof OptionalInt o) {
            return o.isPresent() ? o.getAsInt() : null;
        }
        if (value instanceof OptionalLong o) {
            return o.isPresent() ? o.getAsLong() : null;
        }
        if (value instanceof OptionalDouble o) {
            return o.isPresent() ? o.getAsDouble() : null;
        }
        throw wrongClass(value, type, where);
    }

    private static <T, S> S toStorage(CustomArrowType<T, S> codec, Object value, Location where) {
        try {
            return codec.toStorage(codec.javaType().cast(value));
        } catch (IllegalArgumentException e) {
            throw new ArrowPayloadException(where + ": " + e.getMessage(), e);
        }
    }

    private static Object expect(Object value, ValueType type, Location where) {
        Class<?> expected = boxed(type);
        if (!expected.isInstance(value)) {
            throw wrongClass(value, type, where);
        }
        return value;
    }

    private static Object expectClass(Object value, Class<?> expected, ValueType type, Location where) {
        if (!expected.isInstance(value)) {
            throw wrongClass(value, type, where);
        }
        return value;
    }

    private static ArrowPayloadException wrongClass(Object value, ValueType type, Location where) {
        return new ArrowPayloadException(where + ": expected " + TypeNames.simple(type.javaType()) + " but got "
                + value.getClass().getName());
    }

    private static Class<?> boxed(ValueType type) {
        if (type instanceof ValueType.Scalar s) {
            return s.kind().boxedType();
        }
        return (Class<?>) type.javaType();
    }

    private static void writeScalar(FieldVector vector, int index, Object value, ScalarKind kind, Location where) {
        switch (kind) {
            case BOOLEAN -> {
                if (vector instanceof BitVector v) {
                    v.setSafe(index, (Boolean) value ? 1 : 0);
                    return;
                }
            }
            case BYTE, SHORT, INT, LONG -> {
                if (writeInteger(vector, index, ((Number) value).longValue(), where)) {
                    return;
                }
            }
            case FLOAT, DOUBLE -> {
                double d = ((Number) value).doubleValue();
                if (vector instanceof Float8Vector v) {
                    v.setSafe(index, d);
                    return;
                }
                if (vector instanceof Float4Vector v) {
                    v.setSafe(index, (float) d);
                    return;
                }
            }
            case STRING -> {
                if (writeBytes(vector, index, ((String) value).getBytes(StandardCharsets.UTF_8), true)) {
                    return;
                }
            }
            case BYTES -> {
                byte[] bytes = (byte[]) value;
                if (vector instanceof FixedSizeBinaryVector v) {
                    if (bytes.length != v.getByteWidth()) {
                        throw new ArrowPayloadException(where + ": " + bytes.length
                                + " bytes do not fit a field of exactly " + v.getByteWidth());
                    }
                    v.setSafe(index, bytes);
                    return;
                }
                if (writeBytes(vector, index, bytes, false)) {
                    return;
                }
            }
            case INSTANT, LOCAL_DATE_TIME -> {
                Instant instant = value instanceof LocalDateTime t ? t.toInstant(ZoneOffset.UTC) : (Instant) value;
                if (vector instanceof TimeStampVector v) {
                    v.setSafe(
                            index,
                            exact(
                                    () -> TimeUnits.fromInstant(
                                            instant,
                                            ((ArrowType.Timestamp) v.getField().getType()).getUnit()),
                                    value,
                                    vector,
                                    where));
                    return;
                }
            }
            case LOCAL_DATE -> {
                LocalDate date = (LocalDate) value;
                if (vector instanceof DateDayVector v) {
                    v.setSafe(index, (int) exact(() -> Math.toIntExact(date.toEpochDay()), value, vector, where));
                    return;
                }
                if (vector instanceof DateMilliVector v) {
                    v.setSafe(
                            index,
                            exact(() -> Math.multiplyExact(date.toEpochDay(), 86_400_000L), value, vector, where));
                    return;
                }
            }
            case DURATION -> {
                if (vector instanceof DurationVector v) {
                    v.setSafe(
                            index,
                            exact(() -> TimeUnits.fromDuration((Duration) value, v.getUnit()), value, vector, where));
                    return;
                }
            }
            case DECIMAL -> {
                if (writeDecimal(vector, index, (BigDecimal) value, where)) {
                    return;
                }
            }
        }
        throw new ArrowPayloadException(where + ": cannot write "
                + value.getClass().getSimpleName() + " into an Arrow " + describe(vector) + " field");
    }

    private static long exact(
            java.util.function.LongSupplier conversion, Object value, FieldVector vector, Location where) {
        try {
            return conversion.getAsLong();
        } catch (ArithmeticException e) {
            throw new ArrowPayloadException(where + ": " + value + " does not fit in " + describe(vector), e);
        }
    }

    private static boolean writeInteger(FieldVector vector, int index, long value, Location where) {
        switch (vector.getMinorType()) {
            case TINYINT ->
                ((TinyIntVector) vector)
                        .setSafe(index, (byte) inRange(value, Byte.MIN_VALUE, Byte.MAX_VALUE, vector, where));
            case SMALLINT ->
                ((SmallIntVector) vector)
                        .setSafe(index, (short) inRange(value, Short.MIN_VALUE, Short.MAX_VALUE, vector, where));
            case INT ->
                ((IntVector) vector)
                        .setSafe(index, (int) inRange(value, Integer.MIN_VALUE, Integer.MAX_VALUE, vector, where));
            case BIGINT -> ((BigIntVector) vector).setSafe(index, value);
            case UINT1 -> ((UInt1Vector) vector).setSafe(index, (int) inRange(value, 0, 0xFF, vector, where));
            case UINT2 -> ((UInt2Vector) vector).setSafe(index, (char) inRange(value, 0, 0xFFFF, vector, where));
            case UINT4 -> ((UInt4Vector) vector).setSafe(index, (int) inRange(value, 0, 0xFFFF_FFFFL, vector, where));
            case UINT8 -> ((UInt8Vector) vector).setSafe(index, inRange(value, 0, Long.MAX_VALUE, vector, where));
            default -> {
                return false;
            }
        }
        return true;
    }

    private static long inRange(long value, long min, long max, FieldVector vector, Location where) {
        if (value < min || value > max) {
            throw new ArrowPayloadException(where + ": " + value + " does not fit in " + describe(vector));
        }
        return value;
    }

    private static boolean writeBytes(FieldVector vector, int index, byte[] bytes, boolean text) {
        switch (vector.getMinorType()) {
            // text fields must hold UTF-8, so only strings go there; strings go into binary fields as their UTF-8 bytes
            case VARCHAR, LARGEVARCHAR, VIEWVARCHAR -> {
                if (!text) {
                    return false;
                }
                switch (vector.getMinorType()) {
                    case VARCHAR -> ((VarCharVector) vector).setSafe(index, bytes);
                    case LARGEVARCHAR -> ((LargeVarCharVector) vector).setSafe(index, bytes);
                    default -> ((ViewVarCharVector) vector).setSafe(index, bytes);
                }
            }
            case VARBINARY -> ((VarBinaryVector) vector).setSafe(index, bytes);
            case LARGEVARBINARY -> ((LargeVarBinaryVector) vector).setSafe(index, bytes);
            case VIEWVARBINARY -> ((ViewVarBinaryVector) vector).setSafe(index, bytes);
            default -> {
                return false;
            }
        }
        return true;
    }

    private static boolean writeDecimal(FieldVector vector, int index, BigDecimal value, Location where) {
        if (!(vector.getField().getType() instanceof ArrowType.Decimal decimal)) {
            return false;
        }
        BigDecimal scaled;
        try {
            scaled = value.setScale(decimal.getScale(), RoundingMode.UNNECESSARY);
        } catch (ArithmeticException e) {
            throw new ArrowPayloadException(
                    where + ": " + value.toPlainString() + " has more than " + decimal.getScale()
                            + " decimal places, the scale of " + describe(vector),
                    e);
        }
        if (scaled.precision() > decimal.getPrecision()) {
            throw new ArrowPayloadException(
                    where + ": " + value.toPlainString() + " has more digits than " + describe(vector) + " holds");
        }
        if (vector instanceof DecimalVector v) {
            v.setSafe(index, scaled);
        } else {
            ((Decimal256Vector) vector).setSafe(index, scaled);
        }
        return true;
    }

    private static void writeRecord(
            FieldVector vector, int index, Object value, ValueType.RecordType type, Location where) {
        if (!(vector instanceof StructVector struct)) {
            throw new ArrowPayloadException(where + ": cannot write record "
                    + type.javaType().getSimpleName() + " into an Arrow " + describe(vector) + " field");
        }
        struct.setIndexDefined(index);
        for (ValueType.Component component : type.components()) {
            Location at = where.component(component.name());
            FieldVector child = struct.getChild(component.name());
            if (child == null) {
                throw new ArrowPayloadException(at + ": the struct field has no child '" + component.name() + "'");
            }
            write(child, index, componentValue(value, component), component.type(), at);
        }
    }

    private static Object componentValue(Object record, ValueType.Component component) {
        try {
            return component.accessor().invoke(record);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("cannot read " + component.accessor(), e);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException("the accessor " + component.accessor() + " threw", e.getCause());
        }
    }

    private static void writeList(
            FieldVector vector, int index, List<?> list, ValueType.ListType type, Location where) {
        if (vector instanceof ListVector v && !(vector instanceof MapVector)) {
            int offset = v.startNewValue(index);
            FieldVector data = v.getDataVector();
            for (int i = 0; i < list.size(); i++) {
                write(data, offset + i, list.get(i), type.element(), where.element(i));
            }
            v.endValue(index, list.size());
            return;
        }
        if (vector instanceof LargeListVector v) {
            long offset = v.startNewValue(index);
            FieldVector data = (FieldVector) v.getDataVector();
            for (int i = 0; i < list.size(); i++) {
                write(data, Math.toIntExact(offset + i), list.get(i), type.element(), where.element(i));
            }
            v.endValue(index, list.size());
            return;
        }
        throw new ArrowPayloadException(where + ": cannot write a List into an Arrow " + describe(vector) + " field");
    }

    private static void writeMap(FieldVector vector, int index, Map<?, ?> map, ValueType.MapType type, Location where) {
        if (!(vector instanceof MapVector v)) {
            throw new ArrowPayloadException(
                    where + ": cannot write a Map into an Arrow " + describe(vector) + " field");
        }
        int offset = v.startNewValue(index);
        StructVector entries = (StructVector) v.getDataVector();
        FieldVector keys = (FieldVector) entries.getChildByOrdinal(0);
        FieldVector values = (FieldVector) entries.getChildByOrdinal(1);
        int i = 0;
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            if (entry.getKey() == null) {
                throw new ArrowPayloadException(where.mapPart("key") + ": a map key is null; Arrow map keys never are");
            }
            entries.setIndexDefined(offset + i);
            write(keys, offset + i, entry.getKey(), type.key(), where.mapPart("key"));
            write(values, offset + i, entry.getValue(), type.value(), where.mapPart(String.valueOf(entry.getKey())));
            i++;
        }
        v.endValue(index, map.size());
    }

    static String describe(FieldVector vector) {
        return vector.getField().getType().toString();
    }
}
