package ai.chalk.compute.function.arrow;

import ai.chalk.compute.proto.arrow.v1.EmptyMessage;
import ai.chalk.compute.proto.arrow.v1.FixedSizeList;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Converts Arrow Java schemas to Chalk's {@code chalk.arrow.v1.Schema}, as the function catalog stores them, and back: every
 * field with its name, type, nullability, metadata and children. A nested type also names its element fields in the
 * type itself ({@code List.field_type}, {@code Struct.sub_field_types}, {@code Map.key_field}/{@code item_field}),
 * while {@code children} holds the Arrow field's children exactly (for a map, its {@code entries} struct).
 * <pre>{@code
 * ai.chalk.compute.proto.arrow.v1.Schema input = SchemaProtos.toProto(definition.inputSchema());
 * }</pre>
 */
public final class SchemaProtos {

    private static final EmptyMessage EMPTY = EmptyMessage.getDefaultInstance();

    private SchemaProtos() {}

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
                        .setPrecision(decimal.getPrecision())
                        .setScale(decimal.getScale());
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
            case FixedSizeList ->
                out.setFixedSizeList(FixedSizeList.newBuilder()
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
            default ->
                throw new IllegalArgumentException(
                        "field '" + field.getName() + "': Arrow type " + type + " has no chalk.arrow.v1 form");
        }
        return out.build();
    }

    private static void integer(ai.chalk.compute.proto.arrow.v1.ArrowType.Builder out, ArrowType.Int type) {
        boolean signed = type.getIsSigned();
        switch (type.getBitWidth()) {
            case 8 -> {
                if (signed) out.setInt8(EMPTY);
                else out.setUint8(EMPTY);
            }
            case 16 -> {
                if (signed) out.setInt16(EMPTY);
                else out.setUint16(EMPTY);
            }
            case 32 -> {
                if (signed) out.setInt32(EMPTY);
                else out.setUint32(EMPTY);
            }
            case 64 -> {
                if (signed) out.setInt64(EMPTY);
                else out.setUint64(EMPTY);
            }
            default -> throw new IllegalArgumentException("Arrow type " + type + " has no chalk.arrow.v1 form");
        }
    }

    private static ai.chalk.compute.proto.arrow.v1.List list(Field field) {
        return ai.chalk.compute.proto.arrow.v1.List.newBuilder()
                .setFieldType(toProto(onlyChild(field)))
                .build();
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

    /**
     * Converts a {@code chalk.arrow.v1.Schema} back to an Arrow Java schema, metadata included: the inverse of
     * {@link #toProto(Schema)}.
     *
     * @param schema the catalog's schema
     * @return the Arrow Java schema
     * @throws IllegalArgumentException when a field has no type, or an extension type
     */
    public static Schema fromProto(ai.chalk.compute.proto.arrow.v1.Schema schema) {
        List<Field> fields = new ArrayList<>();
        schema.getColumnsList().forEach(f -> fields.add(fromProto(f)));
        return new Schema(fields, schema.getMetadataCount() == 0 ? null : schema.getMetadataMap());
    }

    /**
     * Converts one {@code chalk.arrow.v1.Field} and its children back to an Arrow Java field. Children come from
     * {@code children} when present, else from the fields its type names.
     *
     * @param field the catalog's field
     * @return the Arrow Java field
     * @throws IllegalArgumentException when it has no type, or an extension type
     */
    public static Field fromProto(ai.chalk.compute.proto.arrow.v1.Field field) {
        var proto = field.getArrowType();
        List<ai.chalk.compute.proto.arrow.v1.Field> children = new ArrayList<>(field.getChildrenList());
        ArrowType type = switch (proto.getArrowTypeEnumCase()) {
            case NONE -> ArrowType.Null.INSTANCE;
            case BOOL -> ArrowType.Bool.INSTANCE;
            case INT8 -> new ArrowType.Int(8, true);
            case INT16 -> new ArrowType.Int(16, true);
            case INT32 -> new ArrowType.Int(32, true);
            case INT64 -> new ArrowType.Int(64, true);
            case UINT8 -> new ArrowType.Int(8, false);
            case UINT16 -> new ArrowType.Int(16, false);
            case UINT32 -> new ArrowType.Int(32, false);
            case UINT64 -> new ArrowType.Int(64, false);
            case FLOAT16 -> new ArrowType.FloatingPoint(FloatingPointPrecision.HALF);
            case FLOAT32 -> new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case FLOAT64 -> new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            case UTF8 -> ArrowType.Utf8.INSTANCE;
            case LARGE_UTF8 -> ArrowType.LargeUtf8.INSTANCE;
            case BINARY -> ArrowType.Binary.INSTANCE;
            case LARGE_BINARY -> ArrowType.LargeBinary.INSTANCE;
            case FIXED_SIZE_BINARY -> new ArrowType.FixedSizeBinary(proto.getFixedSizeBinary());
            case DATE32 -> new ArrowType.Date(DateUnit.DAY);
            case DATE64 -> new ArrowType.Date(DateUnit.MILLISECOND);
            case TIME32 -> new ArrowType.Time(unit(proto.getTime32()), 32);
            case TIME64 -> new ArrowType.Time(unit(proto.getTime64()), 64);
            case TIMESTAMP ->
                new ArrowType.Timestamp(
                        unit(proto.getTimestamp().getTimeUnit()),
                        proto.getTimestamp().getTimezone().isEmpty()
                                ? null
                                : proto.getTimestamp().getTimezone());
            case DURATION -> new ArrowType.Duration(unit(proto.getDuration()));
            case DECIMAL_128 ->
                new ArrowType.Decimal(
                        proto.getDecimal128().getPrecision(),
                        proto.getDecimal128().getScale(),
                        128);
            case DECIMAL_256 ->
                new ArrowType.Decimal(
                        proto.getDecimal256().getPrecision(),
                        proto.getDecimal256().getScale(),
                        256);
            case STRUCT -> {
                if (children.isEmpty()) {
                    children.addAll(proto.getStruct().getSubFieldTypesList());
                }
                yield ArrowType.Struct.INSTANCE;
            }
            case LIST -> {
                if (children.isEmpty()) {
                    children.add(proto.getList().getFieldType());
                }
                yield ArrowType.List.INSTANCE;
            }
            case LARGE_LIST -> {
                if (children.isEmpty()) {
                    children.add(proto.getLargeList().getFieldType());
                }
                yield ArrowType.LargeList.INSTANCE;
            }
            case FIXED_SIZE_LIST -> {
                if (children.isEmpty()) {
                    children.add(proto.getFixedSizeList().getFieldType());
                }
                yield new ArrowType.FixedSizeList(proto.getFixedSizeList().getListSize());
            }
            case MAP -> {
                if (children.isEmpty()) {
                    children.add(ai.chalk.compute.proto.arrow.v1.Field.newBuilder()
                            .setName("entries")
                            .setArrowType(ai.chalk.compute.proto.arrow.v1.ArrowType.newBuilder()
                                    .setStruct(ai.chalk.compute.proto.arrow.v1.Struct.getDefaultInstance()))
                            .addChildren(proto.getMap().getKeyField())
                            .addChildren(proto.getMap().getItemField())
                            .build());
                }
                yield new ArrowType.Map(proto.getMap().getKeysSorted());
            }
            case EXTENSION, ARROWTYPEENUM_NOT_SET ->
                throw new IllegalArgumentException("field '" + field.getName() + "': type "
                        + proto.getArrowTypeEnumCase() + " has no Arrow Java form here");
        };
        List<Field> javaChildren = new ArrayList<>();
        children.forEach(c -> javaChildren.add(fromProto(c)));
        return new Field(
                field.getName(),
                new FieldType(
                        field.getNullable(), type, null, field.getMetadataCount() == 0 ? null : field.getMetadataMap()),
                javaChildren);
    }

    private static org.apache.arrow.vector.types.TimeUnit unit(ai.chalk.compute.proto.arrow.v1.TimeUnit unit) {
        return switch (unit) {
            case TIME_UNIT_SECOND -> org.apache.arrow.vector.types.TimeUnit.SECOND;
            case TIME_UNIT_MILLISECOND -> org.apache.arrow.vector.types.TimeUnit.MILLISECOND;
            case TIME_UNIT_NANOSECOND -> org.apache.arrow.vector.types.TimeUnit.NANOSECOND;
            default -> org.apache.arrow.vector.types.TimeUnit.MICROSECOND;
        };
    }

    private static Map<String, String> orEmpty(Map<String, String> metadata) {
        return metadata == null ? Map.of() : metadata;
    }
}
