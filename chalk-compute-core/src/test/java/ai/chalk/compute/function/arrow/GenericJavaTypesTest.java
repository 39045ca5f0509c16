package ai.chalk.compute.function.arrow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.FunctionRegistry;
import com.acme.AllTypes;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

class GenericJavaTypesTest {

    private final FunctionDefinition everything =
            new FunctionRegistry().register(AllTypes.class).get(0);

    @Test
    void everyColumnButAStructHasAGenericJavaType() throws Exception {
        List<Type> types = new ArrayList<>();
        for (Field field : everything.inputSchema().getFields()) {
            if (!field.getName().equals("point")) {
                types.add(GenericJavaTypes.of(field));
            }
        }
        assertThat(types.subList(0, 14))
                .containsExactly(
                        Boolean.class,
                        Byte.class,
                        Short.class,
                        Integer.class,
                        Long.class,
                        Float.class,
                        Double.class,
                        String.class,
                        byte[].class,
                        Instant.class,
                        LocalDateTime.class,
                        LocalDate.class,
                        Duration.class,
                        BigDecimal.class);
        assertThat(types.get(14)).isInstanceOfSatisfying(ParameterizedType.class, p -> {
            assertThat(p.getRawType()).isEqualTo(List.class);
            assertThat(p.getActualTypeArguments()).containsExactly(String.class);
        });
        assertThat(types.get(15)).isInstanceOfSatisfying(ParameterizedType.class, p -> {
            assertThat(p.getRawType()).isEqualTo(Map.class);
            assertThat(p.getActualTypeArguments()).containsExactly(String.class, Integer.class);
        });
        assertThat(types.get(16)).isEqualTo(Long.class); // Optional<Long> is a nullable int64
        Field point = everything.inputSchema().findField("point");
        assertThat(GenericJavaTypes.of(point))
                .as("a record this JVM shares reads as itself")
                .isEqualTo(Class.forName(point.getMetadata().get(ChalkMetadata.JAVA_TYPE)));
        Field foreign = new Field(
                "point",
                new FieldType(true, point.getType(), null, Map.of(ChalkMetadata.JAVA_TYPE, "com.elsewhere.Point")),
                point.getChildren());
        assertThatThrownBy(() -> GenericJavaTypes.of(foreign))
                .hasMessageContaining("column 'point'")
                .hasMessageContaining("com.elsewhere.Point")
                .hasMessageContaining("local FunctionDefinition");
        Field pythonSandbox = new Field(
                "sandbox",
                new FieldType(
                        false,
                        ArrowType.Struct.INSTANCE,
                        null,
                        Map.of(ChalkMetadata.PYTHON_TYPE, "chalkcompute.Sandbox")),
                List.of(Field.notNullable("sandbox_id", ArrowType.LargeUtf8.INSTANCE)));
        assertThat(GenericJavaTypes.of(pythonSandbox))
                .as("a sandbox from a Python function, by its python type")
                .isEqualTo(ai.chalk.compute.sandbox.Sandbox.class);
        Field anonymous = new Field("pair", FieldType.nullable(point.getType()), point.getChildren());
        assertThatThrownBy(() -> GenericJavaTypes.of(anonymous)).hasMessageContaining("column 'pair'");
        assertThatThrownBy(() -> GenericJavaTypes.of(Field.nullable("u", new ArrowType.Int(32, false))))
                .hasMessageContaining("column 'u'");
    }

    @Test
    void valuesRoundTripInTheirGenericForm() {
        Schema schema = new Schema(List.of(
                everything.inputSchema().findField("tags"),
                everything.inputSchema().findField("counts"),
                everything.inputSchema().findField("at"),
                everything.inputSchema().findField("maybe")));
        RowCodec codec = RowCodec.of(
                schema, schema.getFields().stream().map(GenericJavaTypes::of).toList(), ArrowTypeMapping.standard());
        Instant at = Instant.parse("2026-12-01T08:00:00.123456Z");
        List<Object[]> rows = List.<Object[]>of(
                new Object[] {List.of("a", "b"), Map.of("x", 1), at, 5L}, new Object[] {List.of(), Map.of(), at, null});

        List<Object[]> decoded = codec.decode(codec.encode(rows), DecodeContext.empty());

        assertThat(decoded).hasSize(2);
        assertThat(decoded.get(0)).containsExactly(List.of("a", "b"), Map.of("x", 1), at, 5L);
        assertThat(decoded.get(1)).containsExactly(List.of(), Map.of(), at, null);
    }
}
