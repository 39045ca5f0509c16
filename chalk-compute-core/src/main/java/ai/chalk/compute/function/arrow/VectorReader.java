package ai.chalk.compute.function.arrow;

import java.lang.reflect.InvocationTargetException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DateMilliVector;
import org.apache.arrow.vector.Decimal256Vector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.DurationVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.FloatingPointVector;
import org.apache.arrow.vector.LargeVarBinaryVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.TimeStampVector;
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
 * Reads Java values out of Arrow vectors. Like {@link VectorWriter} it follows the vector's actual type,
 * so payloads from other callers (large strings, wider or narrower integers, other time units) read
 * into the declared Java type whenever the value fits.
 */
final class VectorReader {

    private VectorReader() {}

    /**
     * Reads one value.
     *
     * @param vector  the vector
     * @param index   the slot to read
     * @param type    the declared Java type
     * @param context services for rebuilding custom values
     * @param where   where it is, for messages
     * @return the value as the declared type, boxed for primitives
     * @throws ArrowPayloadException when it cannot be read as that type
     */
    static Object read(FieldVector vector, int index, ValueType type, DecodeContext context, Location where) {
        if (type instanceof ValueType.OptionalType o) {
            return wrap(vector.isNull(index) ? null : read(vector, index, o.content(), context, where), o);
        }
        if (vector.isNull(index)) {
            if (!type.nullable()) {
                throw new ArrowPayloadException(
                        where + ": null, but " + TypeNames.simple(type.javaType()) + " cannot hold null");
            }
            return null;
        }
        if (type instanceof ValueType.Scalar s) {
            return readScalar(vector, index, s, where);
        }
        if (type instanceof ValueType.EnumType e) {
            return readEnum(vector, index, e, where);
        }
        if (type instanceof ValueType.RecordType r) {
            return readRecord(vector, index, r, context, where);
        }
        if (type instanceof ValueType.ListType l) {
            return readList(vector, index, l, context, where);
        }
        if (type instanceof ValueType.MapType m) {
            return readMap(vector, index, m, context, where);
        }
        ValueType.CustomType c = (ValueType.CustomType) type;
        return fromStorage(c.codec(), read(vector, index, c.storage(), context, where), context, where);
    }

    private static Object wrap(Object content, ValueType.OptionalType type) {
        if (type.javaType() == OptionalInt.class) {
            return content == null ? OptionalInt.empty() : OptionalInt.of((Integer) content);
        }
        if (type.javaType() == OptionalLong.class) {
            return content == null ? OptionalLong.empty() : OptionalLong.of((Long) content);
        }
        if (type.javaType() == OptionalDouble.class) {
            return content == null ? OptionalDouble.empty() : OptionalDouble.of((Double) content);
        }
        return Optional.ofNullable(content);
    }

    private static <T, S> T fromStorage(
            CustomArrowType<T, S> codec, Object storage, DecodeContext context, Location where) {
        try {
            return codec.fromStorage(codec.storageType().cast(storage), context);
        } catch (IllegalArgumentException e) {
            throw new ArrowPayloadException(where + ": " + e.getMessage(), e);
        }
    }

    private static Object readScalar(FieldVector vector, int index, ValueType.Scalar type, Location where) {
        Object value = switch (type.kind()) {
            case BOOLEAN -> vector instanceof BitVector v ? (Object) (v.get(index) != 0) : null;
            case BYTE -> integer(vector, index, Byte.MIN_VALUE, Byte.MAX_VALUE, where, l -> (byte) l);
            case SHORT -> integer(vector, index, Short.MIN_VALUE, Short.MAX_VALUE, where, l -> (short) l);
            case INT -> integer(vector, index, Integer.MIN_VALUE, Integer.MAX_VALUE, where, l -> (int) l);
            case LONG -> integer(vector, index, Long.MIN_VALUE, Long.MAX_VALUE, where, l -> l);
            case FLOAT -> {
                Double d = floatingPoint(vector, index);
                yield d == null ? null : (Object) d.floatValue();
            }
            case DOUBLE -> floatingPoint(vector, index);
            case STRING -> {
                byte[] bytes = text(vector, index);
                yield bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
            }
            case BYTES -> binary(vector, index);
            case INSTANT ->
                vector instanceof TimeStampVector v
                        ? TimeUnits.toInstant(
                                v.get(index),
                                ((ArrowType.Timestamp) v.getField().getType()).getUnit())
                        : null;
            case LOCAL_DATE_TIME ->
                vector instanceof TimeStampVector v
                        ? LocalDateTime.ofInstant(
                                TimeUnits.toInstant(
                                        v.get(index),
                                        ((ArrowType.Timestamp) v.getField().getType()).getUnit()),
                                ZoneOffset.UTC)
                        : null;
            case LOCAL_DATE -> {
                if (vector instanceof DateDayVector v) {
                    yield LocalDate.ofEpochDay(v.get(index));
                }
                yield vector instanceof DateMilliVector v
                        ? LocalDate.ofEpochDay(Math.floorDiv(v.get(index), 86_400_000L))
                        : null;
            }
            case DURATION ->
                vector instanceof DurationVector v
                        ? TimeUnits.toDuration(DurationVector.get(v.getDataBuffer(), index), v.getUnit())
                        : null;
            case DECIMAL -> decimal(vector, index);
        };
        if (value == null) {
            throw new ArrowPayloadException(where + ": cannot read " + TypeNames.simple(type.javaType())
                    + " from an Arrow " + VectorWriter.describe(vector) + " field");
        }
        return value;
    }

    private static Object integer(
            FieldVector vector,
            int index,
            long min,
            long max,
            Location where,
            java.util.function.LongFunction<Object> box) {
        if (!(vector instanceof BaseIntVector v)) {
            return null;
        }
        long value = v.getValueAsLong(index);
        boolean unsigned64 = vector.getMinorType() == org.apache.arrow.vector.types.Types.MinorType.UINT8;
        if ((unsigned64 && value < 0) || value < min || value > max) {
            throw new ArrowPayloadException(
                    where + ": " + (unsigned64 && value < 0 ? Long.toUnsignedString(value) : value)
                            + " does not fit in a Java "
                            + (max == Long.MAX_VALUE
                                    ? "long"
                                    : max == Integer.MAX_VALUE ? "int" : max == Short.MAX_VALUE ? "short" : "byte"));
        }
        return box.apply(value);
    }

    private static Double floatingPoint(FieldVector vector, int index) {
        if (vector instanceof FloatingPointVector v) {
            return v.getValueAsDouble(index);
        }
        // a caller whose language has one number type may send whole numbers for a double parameter
        return vector instanceof BaseIntVector v ? (double) v.getValueAsLong(index) : null;
    }

    private static byte[] text(FieldVector vector, int index) {
        return switch (vector.getMinorType()) {
            case VARCHAR -> ((VarCharVector) vector).get(index);
            case LARGEVARCHAR -> ((LargeVarCharVector) vector).get(index);
            case VIEWVARCHAR -> ((ViewVarCharVector) vector).get(index);
            default -> null;
        };
    }

    private static byte[] binary(FieldVector vector, int index) {
        return switch (vector.getMinorType()) {
            case VARBINARY -> ((VarBinaryVector) vector).get(index);
            case LARGEVARBINARY -> ((LargeVarBinaryVector) vector).get(index);
            case VIEWVARBINARY -> ((ViewVarBinaryVector) vector).get(index);
            case FIXEDSIZEBINARY -> ((FixedSizeBinaryVector) vector).get(index);
            default -> null;
        };
    }

    private static BigDecimal decimal(FieldVector vector, int index) {
        BigDecimal value;
        if (vector instanceof DecimalVector v) {
            value = v.getObject(index);
        } else if (vector instanceof Decimal256Vector v) {
            value = v.getObject(index);
        } else {
            return null;
        }
        // the field's scale pads values with zeros; give back the number the sender wrote (1.5, not
        // 1.500000000000000000)
        BigDecimal stripped = value.stripTrailingZeros();
        return stripped.scale() < 0 ? stripped.setScale(0, RoundingMode.UNNECESSARY) : stripped;
    }

    private static Object readEnum(FieldVector vector, int index, ValueType.EnumType type, Location where) {
        byte[] bytes = text(vector, index);
        if (bytes == null) {
            throw new ArrowPayloadException(where + ": cannot read enum "
                    + type.javaType().getName() + " from an Arrow " + VectorWriter.describe(vector) + " field");
        }
        String name = new String(bytes, StandardCharsets.UTF_8);
        for (Object constant : type.constants()) {
            if (((Enum<?>) constant).name().equals(name)) {
                return constant;
            }
        }
        throw new ArrowPayloadException(where + ": '" + name + "' is not a constant of "
                + type.javaType().getName() + " " + Arrays.toString(type.constants()));
    }

    private static Object readRecord(
            FieldVector vector, int index, ValueType.RecordType type, DecodeContext context, Location where) {
        if (!(vector instanceof StructVector struct)) {
            throw new ArrowPayloadException(where + ": cannot read record "
                    + type.javaType().getName() + " from an Arrow " + VectorWriter.describe(vector) + " field");
        }
        Object[] values = new Object[type.components().size()];
        for (int i = 0; i < values.length; i++) {
            ValueType.Component component = type.components().get(i);
            Location at = where.component(component.name());
            FieldVector child = struct.getChild(component.name());
            if (child == null) {
                if (!component.type().nullable()) {
                    throw new ArrowPayloadException(at + ": the struct has no field '" + component.name() + "'");
                }
                // a sender with an older version of the record left the field out: it reads as absent
                values[i] = component.type() instanceof ValueType.OptionalType o ? wrap(null, o) : null;
                continue;
            }
            values[i] = read(child, index, component.type(), context, at);
        }
        try {
            return type.constructor().newInstance(values);
        } catch (InvocationTargetException e) {
            throw new ArrowPayloadException(
                    where + ": " + type.javaType().getName() + " rejected the values: "
                            + e.getCause().getMessage(),
                    e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    "cannot construct " + type.javaType().getName(), e);
        }
    }

    private static List<Object> readList(
            FieldVector vector, int index, ValueType.ListType type, DecodeContext context, Location where) {
        long start;
        long end;
        FieldVector data;
        if (vector instanceof ListVector v && !(vector instanceof MapVector)) {
            start = v.getElementStartIndex(index);
            end = v.getElementEndIndex(index);
            data = v.getDataVector();
        } else if (vector instanceof LargeListVector v) {
            start = v.getElementStartIndex(index);
            end = v.getElementEndIndex(index);
            data = (FieldVector) v.getDataVector();
        } else {
            throw new ArrowPayloadException(
                    where + ": cannot read a List from an Arrow " + VectorWriter.describe(vector) + " field");
        }
        List<Object> list = new ArrayList<>((int) (end - start));
        for (long i = start; i < end; i++) {
            list.add(read(data, Math.toIntExact(i), type.element(), context, where.element((int) (i - start))));
        }
        return list;
    }

    private static Map<Object, Object> readMap(
            FieldVector vector, int index, ValueType.MapType type, DecodeContext context, Location where) {
        if (!(vector instanceof MapVector v)) {
            throw new ArrowPayloadException(
                    where + ": cannot read a Map from an Arrow " + VectorWriter.describe(vector) + " field");
        }
        StructVector entries = (StructVector) v.getDataVector();
        FieldVector keys = (FieldVector) entries.getChildByOrdinal(0);
        FieldVector values = (FieldVector) entries.getChildByOrdinal(1);
        Map<Object, Object> map = new LinkedHashMap<>();
        for (int i = v.getElementStartIndex(index); i < v.getElementEndIndex(index); i++) {
            Object key = read(keys, i, type.key(), context, where.mapPart("key"));
            map.put(key, read(values, i, type.value(), context, where.mapPart(String.valueOf(key))));
        }
        return map;
    }
}
