package ai.chalk.compute.function.arrow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.proto.arrow.v1.ArrowType.ArrowTypeEnumCase;
import ai.chalk.compute.proto.arrow.v1.TimeUnit;
import com.acme.AllTypes;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.IntervalUnit;
import org.apache.arrow.vector.types.UnionMode;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

class SchemaProtosTest {

    @Test
    void everyTypeTheMappingProducesConverts() {
        FunctionRegistry registry = new FunctionRegistry();
        FunctionDefinition definition = registry.register(AllTypes.class).get(0);

        var input = SchemaProtos.toProto(definition.inputSchema());
        assertThat(input.getColumnsList())
                .extracting(f -> f.getName())
                .containsExactly(
                        "flag", "b", "s", "i", "l", "f", "d", "text", "bytes", "at", "local", "day", "took", "amount",
                        "tags", "counts", "point", "maybe");
        assertThat(input.getColumnsList())
                .extracting(f -> f.getArrowType().getArrowTypeEnumCase())
                .containsExactly(
                        ArrowTypeEnumCase.BOOL,
                        ArrowTypeEnumCase.INT8,
                        ArrowTypeEnumCase.INT16,
                        ArrowTypeEnumCase.INT32,
                        ArrowTypeEnumCase.INT64,
                        ArrowTypeEnumCase.FLOAT32,
                        ArrowTypeEnumCase.FLOAT64,
                        ArrowTypeEnumCase.UTF8,
                        ArrowTypeEnumCase.BINARY,
                        ArrowTypeEnumCase.TIMESTAMP,
                        ArrowTypeEnumCase.TIMESTAMP,
                        ArrowTypeEnumCase.DATE32,
                        ArrowTypeEnumCase.DURATION,
                        ArrowTypeEnumCase.DECIMAL_128,
                        ArrowTypeEnumCase.LIST,
                        ArrowTypeEnumCase.MAP,
                        ArrowTypeEnumCase.STRUCT,
                        ArrowTypeEnumCase.INT64);
        // nullability as the definition says: primitives are required, Optional and references may be null
        for (int i = 0; i < input.getColumnsCount(); i++) {
            assertThat(input.getColumns(i).getNullable())
                    .as(input.getColumns(i).getName())
                    .isEqualTo(definition.inputSchema().getFields().get(i).isNullable());
        }
        assertThat(column(input, "maybe").getNullable()).isTrue();
        assertThat(column(input, "flag").getNullable()).isFalse();

        var at = column(input, "at").getArrowType().getTimestamp();
        assertThat(at.getTimeUnit()).isEqualTo(TimeUnit.TIME_UNIT_MICROSECOND);
        assertThat(at.getTimezone()).isEqualTo("UTC");
        assertThat(column(input, "local").getArrowType().getTimestamp().getTimezone())
                .isEmpty();
        assertThat(column(input, "took").getArrowType().getDuration()).isEqualTo(TimeUnit.TIME_UNIT_MICROSECOND);
        ArrowType.Decimal decimal =
                (ArrowType.Decimal) field(definition.inputSchema(), "amount").getType();
        assertThat(column(input, "amount").getArrowType().getDecimal128().getPrecision())
                .isEqualTo(decimal.getPrecision());
        assertThat(column(input, "amount").getArrowType().getDecimal128().getScale())
                .isEqualTo(decimal.getScale());
        assertThat(column(input, "l").getMetadataMap()).containsEntry(ChalkMetadata.DEFAULT, "7");

        var tags = column(input, "tags");
        assertThat(tags.getArrowType().getList().getFieldType().getArrowType().getArrowTypeEnumCase())
                .isEqualTo(ArrowTypeEnumCase.UTF8);
        assertThat(tags.getChildrenList())
                .containsExactly(tags.getArrowType().getList().getFieldType());

        var counts = column(input, "counts");
        assertThat(counts.getArrowType().getMap().getKeyField().getArrowType().getArrowTypeEnumCase())
                .isEqualTo(ArrowTypeEnumCase.UTF8);
        assertThat(counts.getArrowType().getMap().getKeyField().getNullable()).isFalse();
        assertThat(counts.getArrowType().getMap().getItemField().getArrowType().getArrowTypeEnumCase())
                .isEqualTo(ArrowTypeEnumCase.INT32);
        assertThat(counts.getChildrenList()).singleElement().satisfies(entries -> {
            assertThat(entries.getArrowType().getArrowTypeEnumCase()).isEqualTo(ArrowTypeEnumCase.STRUCT);
            assertThat(entries.getChildrenList()).hasSize(2);
        });

        var point = column(input, "point");
        assertThat(point.getArrowType().getStruct().getSubFieldTypesList())
                .extracting(f -> f.getName())
                .containsExactly("x", "y");
        assertThat(point.getChildrenList())
                .isEqualTo(point.getArrowType().getStruct().getSubFieldTypesList());

        var output = SchemaProtos.toProto(definition.outputSchema());
        assertThat(output.getColumnsList()).singleElement().satisfies(f -> {
            assertThat(f.getName()).isEqualTo("output");
            assertThat(f.getArrowType().getArrowTypeEnumCase()).isEqualTo(ArrowTypeEnumCase.UTF8);
        });
        assertThat(output.getMetadataMap())
                .containsEntry(ChalkMetadata.FUNCTION_DESCRIPTION, "Takes everything")
                .containsEntry(ChalkMetadata.FUNCTION_IS_GENERATOR, "false");
    }

    @Test
    void theSandboxHandleKeepsItsTypeMetadata() {
        Field sandbox = ArrowTypeMapping.standard().field("output", ai.chalk.compute.sandbox.Sandbox.class);
        var proto = SchemaProtos.toProto(sandbox);
        assertThat(proto.getArrowType().getStruct().getSubFieldTypesList())
                .singleElement()
                .satisfies(f -> {
                    assertThat(f.getName()).isEqualTo("sandbox_id");
                    assertThat(f.getArrowType().getArrowTypeEnumCase()).isEqualTo(ArrowTypeEnumCase.LARGE_UTF8);
                    assertThat(f.getNullable()).isFalse();
                });
        assertThat(proto.getMetadataMap()).isEqualTo(sandbox.getMetadata());
        assertThat(proto.getMetadataMap()).isNotEmpty();
    }

    @Test
    void theRestOfArrowsTypesConvertToo() {
        Field item = Field.nullable("item", new ArrowType.Int(16, false));
        Schema schema = new Schema(
                List.of(
                        Field.nullable("none", ArrowType.Null.INSTANCE),
                        Field.notNullable("u8", new ArrowType.Int(8, false)),
                        Field.notNullable("u16", new ArrowType.Int(16, false)),
                        Field.notNullable("u32", new ArrowType.Int(32, false)),
                        Field.notNullable("u64", new ArrowType.Int(64, false)),
                        Field.notNullable("half", new ArrowType.FloatingPoint(FloatingPointPrecision.HALF)),
                        Field.notNullable("large_text", ArrowType.LargeUtf8.INSTANCE),
                        Field.notNullable("large_bytes", ArrowType.LargeBinary.INSTANCE),
                        Field.notNullable("fixed_bytes", new ArrowType.FixedSizeBinary(16)),
                        Field.notNullable("date_ms", new ArrowType.Date(DateUnit.MILLISECOND)),
                        Field.notNullable(
                                "t32", new ArrowType.Time(org.apache.arrow.vector.types.TimeUnit.MILLISECOND, 32)),
                        Field.notNullable(
                                "t64", new ArrowType.Time(org.apache.arrow.vector.types.TimeUnit.NANOSECOND, 64)),
                        Field.notNullable(
                                "ts_s",
                                new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.SECOND, "Europe/Paris")),
                        Field.notNullable(
                                "dur_ms", new ArrowType.Duration(org.apache.arrow.vector.types.TimeUnit.MILLISECOND)),
                        Field.notNullable("big", new ArrowType.Decimal(60, 10, 256)),
                        new Field("large_list", FieldType.nullable(ArrowType.LargeList.INSTANCE), List.of(item)),
                        new Field("fixed_list", FieldType.nullable(new ArrowType.FixedSizeList(3)), List.of(item))),
                Map.of("owner", "acme"));

        var proto = SchemaProtos.toProto(schema);

        assertThat(proto.getMetadataMap()).containsExactly(Map.entry("owner", "acme"));
        assertThat(proto.getColumnsList())
                .extracting(f -> f.getArrowType().getArrowTypeEnumCase())
                .containsExactly(
                        ArrowTypeEnumCase.NONE,
                        ArrowTypeEnumCase.UINT8,
                        ArrowTypeEnumCase.UINT16,
                        ArrowTypeEnumCase.UINT32,
                        ArrowTypeEnumCase.UINT64,
                        ArrowTypeEnumCase.FLOAT16,
                        ArrowTypeEnumCase.LARGE_UTF8,
                        ArrowTypeEnumCase.LARGE_BINARY,
                        ArrowTypeEnumCase.FIXED_SIZE_BINARY,
                        ArrowTypeEnumCase.DATE64,
                        ArrowTypeEnumCase.TIME32,
                        ArrowTypeEnumCase.TIME64,
                        ArrowTypeEnumCase.TIMESTAMP,
                        ArrowTypeEnumCase.DURATION,
                        ArrowTypeEnumCase.DECIMAL_256,
                        ArrowTypeEnumCase.LARGE_LIST,
                        ArrowTypeEnumCase.FIXED_SIZE_LIST);
        assertThat(column(proto, "fixed_bytes").getArrowType().getFixedSizeBinary())
                .isEqualTo(16);
        assertThat(column(proto, "t32").getArrowType().getTime32()).isEqualTo(TimeUnit.TIME_UNIT_MILLISECOND);
        assertThat(column(proto, "t64").getArrowType().getTime64()).isEqualTo(TimeUnit.TIME_UNIT_NANOSECOND);
        assertThat(column(proto, "ts_s").getArrowType().getTimestamp().getTimezone())
                .isEqualTo("Europe/Paris");
        assertThat(column(proto, "ts_s").getArrowType().getTimestamp().getTimeUnit())
                .isEqualTo(TimeUnit.TIME_UNIT_SECOND);
        assertThat(column(proto, "dur_ms").getArrowType().getDuration()).isEqualTo(TimeUnit.TIME_UNIT_MILLISECOND);
        assertThat(column(proto, "big").getArrowType().getDecimal256().getPrecision())
                .isEqualTo(60);
        assertThat(column(proto, "big").getArrowType().getDecimal256().getScale())
                .isEqualTo(10);
        assertThat(column(proto, "large_list")
                        .getArrowType()
                        .getLargeList()
                        .getFieldType()
                        .getArrowType()
                        .getArrowTypeEnumCase())
                .isEqualTo(ArrowTypeEnumCase.UINT16);
        assertThat(column(proto, "fixed_list").getArrowType().getFixedSizeList().getListSize())
                .isEqualTo(3);
        assertThat(column(proto, "none").getNullable()).isTrue();
    }

    @Test
    void typesWithoutAChalkFormAreRefusedByName() {
        Schema union = new Schema(List.of(new Field(
                "either",
                FieldType.nullable(new ArrowType.Union(UnionMode.Sparse, new int[] {0})),
                List.of(Field.nullable("a", ArrowType.Utf8.INSTANCE)))));
        assertThatThrownBy(() -> SchemaProtos.toProto(union))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("field 'either'")
                .hasMessageContaining("no chalk.arrow.v1 form");
        Schema interval = new Schema(List.of(Field.nullable("gap", new ArrowType.Interval(IntervalUnit.DAY_TIME))));
        assertThatThrownBy(() -> SchemaProtos.toProto(interval)).hasMessageContaining("field 'gap'");
    }

    @Test
    void catalogSchemasConvertBackToTheSameArrowSchemas() {
        FunctionRegistry registry = new FunctionRegistry();
        FunctionDefinition definition = registry.register(AllTypes.class).get(0);
        for (Schema schema : List.of(definition.inputSchema(), definition.outputSchema())) {
            assertThat(SchemaProtos.fromProto(SchemaProtos.toProto(schema))).isEqualTo(schema);
        }
        Field sandbox = ArrowTypeMapping.standard().field("output", ai.chalk.compute.sandbox.Sandbox.class);
        assertThat(SchemaProtos.fromProto(SchemaProtos.toProto(sandbox))).isEqualTo(sandbox);
    }

    @Test
    void nestedFieldsNamedOnlyInTheTypeBecomeChildren() {
        var item = ai.chalk.compute.proto.arrow.v1.Field.newBuilder()
                .setName("item")
                .setNullable(true)
                .setArrowType(ai.chalk.compute.proto.arrow.v1.ArrowType.newBuilder()
                        .setInt64(ai.chalk.compute.proto.arrow.v1.EmptyMessage.getDefaultInstance()))
                .build();
        var list = ai.chalk.compute.proto.arrow.v1.Field.newBuilder()
                .setName("xs")
                .setArrowType(ai.chalk.compute.proto.arrow.v1.ArrowType.newBuilder()
                        .setLargeList(ai.chalk.compute.proto.arrow.v1.List.newBuilder()
                                .setFieldType(item)))
                .build();
        Field converted = SchemaProtos.fromProto(list);
        assertThat(converted.getType()).isEqualTo(ArrowType.LargeList.INSTANCE);
        assertThat(converted.isNullable()).isFalse();
        assertThat(converted.getChildren())
                .singleElement()
                .isEqualTo(Field.nullable("item", new ArrowType.Int(64, true)));
        assertThatThrownBy(() -> SchemaProtos.fromProto(ai.chalk.compute.proto.arrow.v1.Field.newBuilder()
                        .setName("x")
                        .build()))
                .hasMessageContaining("field 'x'");
    }

    private static ai.chalk.compute.proto.arrow.v1.Field column(
            ai.chalk.compute.proto.arrow.v1.Schema schema, String name) {
        return schema.getColumnsList().stream()
                .filter(f -> f.getName().equals(name))
                .findFirst()
                .orElseThrow();
    }

    private static Field field(Schema schema, String name) {
        return schema.findField(name);
    }
}
