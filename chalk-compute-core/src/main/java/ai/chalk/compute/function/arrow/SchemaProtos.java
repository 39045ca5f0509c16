package ai.chalk.compute.function.arrow;

import ai.chalk.compute.proto.arrow.v1.EmptyMessage;
import ai.chalk.compute.proto.arrow.v1.FixedSizeList;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Converts Arrow Java schemas to Chalk's {@code chalk.arrow.v1.Schema}, as the function catalog stores them: every
 * field with its name, type, nullability, metadata and children. A nested type also names its element fields in the
 * type itself ({@code List.field_type}, {@code Struct.sub_field_types}, {@code Map.key_field}/{@code item_field}),
 * while {@code children} holds the Arrow field's children exactly (for a map, its {@code entries} struct).
 * <pre>{@code
 * ai.chalk.compute.proto.arrow.v1.Schema input = SchemaProtos.toProto(definition.inputSchema());
 * }</pre>
 */
public final class SchemaProtos {

    private static final EmptyMessage EMPTY = EmptyMessage.getDefaultInstance();

    private SchemaProtos() {
    }

    /**
     * Converts a schema, its metadata included.
     *
     * @param schema the Arrow Java schema
     * @return the {@code chalk.arrow.v1.Schema}
     * @throws IllegalArgumentException when a field's type has no {@code chalk.arrow.v1} form (unions, intervals, views)
     */
    public static ai.chalk.compute.proto.arrow.v1.Schema toProto(Schema schema) {
        Objects.requireNonNull(schema, "schema");
        var out = ai.chalk.compute.proto.arrow.v1.Schema.newBuilder();
        for (Field field : schema.getFields()) {
            out.addColumns(toProto(field));
        }
        out.putAllMetadata(orEmpty(schema.getCustomMetadata()));
        return out.build();
    }

    /**
     * Converts one field and its children.
     *
     * @param field the Arrow Java field
     * @return the {@code chalk.arrow.v1.Field}
     * @throws IllegalArgumentException when its type, or a child's, has no {@code chalk.arrow.v1} form
     */
    public static ai.chalk.compute.proto.arrow.v1.Field toProto(Field field) {
        var out = ai.chalk.compute.proto.arrow.v1.Field.newBuilder()
                .setName(field.getName())
                .setNullable(field.isNullable())
                .setArrowType(type(field))
                .putAllMetadata(orEmpty(field.getMetadata()));
        for (Field child : field.getChildren()) {
            out.addChildren(toProto(child));
        }
        return out.build();
    }

    private static ai.chalk.compute.proto.arrow.v1.ArrowType type(Field field) {
        var out = ai.chalk.compute.proto.arrow.v1.ArrowType.newBuilder();
        ArrowType type = field.getType();
        switch (type.getTypeID()) {
            case Null -> out.setNone(EMPTY);
            case Bool -> out.setBool(EMPTY);
            case Int -> integer(out, (ArrowType.Int) type);
            case FloatingPoint -> {
                switch (((ArrowType.FloatingPoint) type).getPrecision()) {
                    case HALF -> out.setFloat16(EMPTY);
                    case SINGLE -> out.setFloat32(EMPTY);
                    case DOUBLE -> out.setFloat64(EMPTY);
                }
            }
            case Utf8 -> out.setUtf8(EMPTY);
            case LargeUtf8 -> out.setLargeUtf8(EMPTY);
            case Binary -> out.setBinary(EMPTY);
            case LargeBinary -> out.setLargeBinary(EMPTY);
            case FixedSizeBinary -> out.setFixedSizeBinary(((ArrowType.FixedSizeBinary) type).getByteWidth());
            case Date -> {
                switch (((ArrowType.Date) type).getUnit()) {
                    case DAY -> out.setDate32(EMPTY);
                    case MILLISECOND -> out.setDate64(EMPTY);
                }
            }
            case Time -> {
                ArrowType.Time time = (ArrowType.Time) type;
                if (time.getBitWidth() == 32) {
                    out.setTime32(unit(time.getUnit()));
                } else {
                    out.setTime64(unit(time.getUnit()));
                }
            }
            case Timestamp -> {
                ArrowType.Timestamp timestamp = (ArrowType.Timestamp) type;
                out.setTimestamp(ai.chalk.compute.proto.arrow.v1.Timestamp.newBuilder()
                        .setTimeUnit(unit(timestamp.getUnit()))
                        .setTimezone(timestamp.getTimezone() == null ? "" : timestamp.getTimezone()));
            }
            case Duration -> out.setDuration(unit(((ArrowType.Duration) type).getUnit()));
            case Decimal -> {
                ArrowType.Decimal decimal = (ArrowType.Decimal) type;
                var proto = ai.chalk.compute.proto.arrow.v1.Decimal.newBuilder()
                        .setPrecision(decimal.getPrecision()).setScale(decimal.getScale());
                if (decimal.getBitWidth() == 256) {
                    out.setDecimal256(proto);
                } else {
                    out.setDecimal128(proto);
                }
            }
            case Struct -> {
                var struct = ai.chalk.compute.proto.arrow.v1.Struct.newBuilder();
                field.getChildren().forEach(child -> struct.addSubFieldTypes(toProto(child)));
                out.setStruct(struct);
            }
            case List -> out.setList(list(field));
            case LargeList -> out.setLargeList(list(field));
            case FixedSizeList -> out.setFixedSizeList(FixedSizeList.newBuilder()
                    .setFieldType(toProto(onlyChild(field)))
                    .setListSize(((ArrowType.FixedSizeList) type).getListSize()));
            case Map -> {
                Field entries = onlyChild(field);
                if (entries.getChildren().size() != 2) {
                    throw new IllegalArgumentException("map field '" + field.getName() + "': its entries struct has "
                            + entries.getChildren().size() + " fields, not a key and a value");
                }
                out.setMap(ai.chalk.compute.proto.arrow.v1.Map.newBuilder()
                        .setKeyField(toProto(entries.getChildren().get(0)))
                        .setItemField(toProto(entries.getChildren().get(1)))
                        .setKeysSorted(((ArrowType.Map) type).getKeysSorted()));
            }
            default -> throw new IllegalArgumentException("field '" + field.getName() + "': Arrow type " + type
                    + " has no chalk.arrow.v1 form");
        }
        return out.build();
    }

    private static void integer(ai.chalk.compute.proto.arrow.v1.ArrowType.Builder out, ArrowType.Int type) {
        boolean signed = type.getIsSigned();
        switch (type.getBitWidth()) {
            case 8 -> {
                if (signed) out.setInt8(EMPTY); else out.setUint8(EMPTY);
            }
            case 16 -> {
                if (signed) out.setInt16(EMPTY); else out.setUint16(EMPTY);
            }
            case 32 -> {
                if (signed) out.setInt32(EMPTY); else out.setUint32(EMPTY);
            }
            case 64 -> {
                if (signed) out.setInt64(EMPTY); else out.setUint64(EMPTY);
            }
            default -> throw new IllegalArgumentException("Arrow type " + type + " has no chalk.arrow.v1 form");
        }
    }

    private static ai.chalk.compute.proto.arrow.v1.List list(Field field) {
        return ai.chalk.compute.proto.arrow.v1.List.newBuilder().setFieldType(toProto(onlyChild(field))).build();
    }

    private static Field onlyChild(Field field) {
        if (field.getChildren().size() != 1) {
            throw new IllegalArgumentException("field '" + field.getName() + "' of type " + field.getType() + " has "
                    + field.getChildren().size() + " children, not one");
        }
        return field.getChildren().get(0);
    }

    private static ai.chalk.compute.proto.arrow.v1.TimeUnit unit(org.apache.arrow.vector.types.TimeUnit unit) {
        return switch (unit) {
            case SECOND -> ai.chalk.compute.proto.arrow.v1.TimeUnit.TIME_UNIT_SECOND;
            case MILLISECOND -> ai.chalk.compute.proto.arrow.v1.TimeUnit.TIME_UNIT_MILLISECOND;
            case MICROSECOND -> ai.chalk.compute.proto.arrow.v1.TimeUnit.TIME_UNIT_MICROSECOND;
            case NANOSECOND -> ai.chalk.compute.proto.arrow.v1.TimeUnit.TIME_UNIT_NANOSECOND;
        };
    }

    private static Map<String, String> orEmpty(Map<String, String> metadata) {
        return metadata == null ? Map.of() : metadata;
    }
}
