package ai.chalk.compute.function.arrow;

import static ai.chalk.compute.function.arrow.Fixtures.type;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.arrow.FlatIpc;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The codec's way without Arrow's vectors for plain scalars writes exactly the bytes Arrow's vectors write, reads what
 * they write, and leaves everything it does not handle to them.
 */
class FlatRowsTest {

    private static final ArrowTypeMapping MAPPING = ArrowTypeMapping.standard();

    static Stream<Arguments> scalarColumns() {
        return Stream.of(
                Arguments.of("primitiveBoolean", List.of(true, false, true)),
                Arguments.of("boxedBoolean", Arrays.asList(true, null, false)),
                Arguments.of("primitiveByte", List.of(Byte.MIN_VALUE, (byte) 0, Byte.MAX_VALUE)),
                Arguments.of("boxedByte", Arrays.asList((byte) 7, null)),
                Arguments.of("primitiveShort", List.of(Short.MIN_VALUE, Short.MAX_VALUE)),
                Arguments.of("boxedShort", Arrays.asList((short) -3, null)),
                Arguments.of("primitiveInt", List.of(Integer.MIN_VALUE, 0, Integer.MAX_VALUE)),
                Arguments.of("boxedInt", Arrays.asList(42, null)),
                Arguments.of("primitiveLong", List.of(Long.MIN_VALUE, 3L, Long.MAX_VALUE)),
                Arguments.of("boxedLong", Arrays.asList(-1L, null)),
                Arguments.of("primitiveFloat", List.of(1.5f, -0.0f, Float.NaN, Float.MAX_VALUE)),
                Arguments.of("boxedFloat", Arrays.asList(Float.NEGATIVE_INFINITY, null)),
                Arguments.of("primitiveDouble", List.of(Math.PI, Double.MIN_VALUE, Double.NaN)),
                Arguments.of("boxedDouble", Arrays.asList(1e300, null)),
                Arguments.of("string", Arrays.asList("", "héllo wörld 🌍", "a\u0000b", null, "tail")),
                Arguments.of("bytes", Arrays.asList(new byte[0], new byte[] {0, 1, -1, 127}, null)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("scalarColumns")
    void eachScalarTypeIsWrittenByteForByteAsArrowsVectorsWriteItAndReadBack(String component, List<Object> values) {
        RowCodec codec = codec(type(component));
        // one row, as a single call sends it, then every prefix as a batch (validity bytes, offsets, padding)
        for (Object value : values) {
            sameAsVectors(codec, List.<Object[]>of(new Object[] {value}));
        }
        for (int size = 2; size <= values.size(); size++) {
            sameAsVectors(
                    codec,
                    values.subList(0, size).stream().map(v -> new Object[] {v}).toList());
        }
    }

    @Test
    void batchesOfSeveralColumnsWithNullsAcrossByteBoundariesAreWrittenAsArrowWritesThem() {
        RowCodec codec = RowCodec.of(
                new Schema(List.of(
                        MAPPING.field("id", long.class),
                        MAPPING.field("label", String.class),
                        MAPPING.field("score", Double.class),
                        MAPPING.field("ok", Boolean.class),
                        MAPPING.field("n", int.class))),
                List.of(long.class, String.class, Double.class, Boolean.class, int.class),
                MAPPING);
        for (int rows : List.of(1, 7, 8, 9, 17, 64, 1000)) {
            List<Object[]> batch = IntStream.range(0, rows)
                    .mapToObj(i -> new Object[] {
                        (long) i * 1_000_003L,
                        i % 7 == 3 ? null : "label-" + i,
                        i % 5 == 1 ? null : i / 3.0,
                        i % 3 == 0 ? null : i % 2 == 0,
                        -i
                    })
                    .toList();
            sameAsVectors(codec, batch);
        }
    }

    @Test
    void theWayWithoutVectorsIsTakenForScalarsAndDeclinedForEverythingElse() {
        RowCodec longs = codec(long.class);
        byte[] payload = longs.encode(List.<Object[]>of(new Object[] {5L}));
        assertThat(FlatIpc.read(payload)).isNotNull();
        assertThat(FlatRows.of(
                        new Schema(List.of(MAPPING.field("v", type("instant")))),
                        List.of(MAPPING.resolve(type("instant")))))
                .isNull();
        // a value of another class (an Integer for a long) goes through the vectors, which name it
        assertThatThrownBy(() -> longs.encode(List.<Object[]>of(new Object[] {5})))
                .isInstanceOf(ArrowPayloadException.class)
                .hasMessage("row 0, column 'v': expected long but got java.lang.Integer");
        // a payload of a wider or other type than the declared one is read by the vectors' way too
        RowCodec ints = codec(int.class);
        assertThat(ints.decode(payload, DecodeContext.empty()).get(0)).containsExactly(5);
        // garbage: declined, for the general reader to report
        assertThat(FlatIpc.read(new byte[] {1, 2, 3})).isNull();
    }

    @Test
    void columnsAreFoundByNameAndExtraColumnsIgnored() {
        RowCodec wide = RowCodec.of(
                new Schema(List.of(MAPPING.field("extra", String.class), MAPPING.field("x", long.class))),
                List.of(String.class, long.class),
                MAPPING);
        RowCodec narrow =
                RowCodec.of(new Schema(List.of(MAPPING.field("x", long.class))), List.of(long.class), MAPPING);
        List<Object[]> rows = narrow.decode(
                wide.encode(List.of(new Object[] {"a", 1L}, new Object[] {"b", 2L})), DecodeContext.empty());
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0)).containsExactly(1L);
        assertThat(rows.get(1)).containsExactly(2L);
    }

    /** The flat way's bytes equal the vectors' bytes, and both ways read them back to the same values. */
    private static void sameAsVectors(RowCodec codec, List<Object[]> rows) {
        byte[] flat = codec.encode(rows);
        byte[] vectors = codec.encodeWithVectors(rows);
        assertThat(flat).as("the bytes of %d rows", rows.size()).isEqualTo(vectors);
        List<Object[]> read = codec.decode(vectors, DecodeContext.empty());
        List<Object[]> general = codec.decodeWithVectors(flat, DecodeContext.empty());
        assertThat(read).hasSameSizeAs(rows);
        assertThat(general).hasSameSizeAs(rows);
        for (int i = 0; i < rows.size(); i++) {
            assertThat(read.get(i)).as("row %d", i).containsExactly(rows.get(i));
            assertThat(general.get(i)).as("row %d", i).containsExactly(rows.get(i));
        }
        assertThat(FlatIpc.read(flat)).as("read in place").isNotNull();
        List<Field> fields = FlatIpc.read(flat).schema().getFields();
        assertThat(fields).isEqualTo(codec.schema().getFields());
        assertThat(new ArrayList<>(read)).hasSize(rows.size());
    }

    private static RowCodec codec(Type javaType) {
        return RowCodec.of(new Schema(List.of(MAPPING.field("v", javaType))), List.of(javaType), MAPPING);
    }
}
