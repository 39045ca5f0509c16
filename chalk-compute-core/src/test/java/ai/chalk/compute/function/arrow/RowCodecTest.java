package ai.chalk.compute.function.arrow;

import static ai.chalk.compute.function.arrow.Fixtures.type;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.function.arrow.Fixtures.Address;
import ai.chalk.compute.function.arrow.Fixtures.Color;
import ai.chalk.compute.function.arrow.Fixtures.Person;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowBlock;
import org.apache.arrow.vector.ipc.message.ArrowFooter;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class RowCodecTest {

    private static final ArrowTypeMapping MAPPING = ArrowTypeMapping.standard();

    private static final Person ADA = new Person(
            "Ada",
            36,
            List.of("math", "engines"),
            Optional.of(new Address("London", LocalDate.of(1833, 6, 5))),
            Map.of("logic", 9.5));
    private static final Person NOBODY = new Person(null, 0, null, Optional.empty(), null);

    static Stream<Arguments> valuesOfEveryType() {
        Map<String, Integer> withNullValue = new LinkedHashMap<>();
        withNullValue.put("a", 1);
        withNullValue.put("b", null);
        List<String> withNullElement = new ArrayList<>(Arrays.asList("x", null, ""));
        return Stream.of(
                Arguments.of("primitiveBoolean", List.of(true, false)),
                Arguments.of("boxedBoolean", Arrays.asList(true, null)),
                Arguments.of("primitiveByte", List.of(Byte.MIN_VALUE, (byte) 0, Byte.MAX_VALUE)),
                Arguments.of("boxedByte", Arrays.asList((byte) 7, null)),
                Arguments.of("primitiveShort", List.of(Short.MIN_VALUE, Short.MAX_VALUE)),
                Arguments.of("boxedShort", Arrays.asList((short) -3, null)),
                Arguments.of("primitiveInt", List.of(Integer.MIN_VALUE, 0, Integer.MAX_VALUE)),
                Arguments.of("boxedInt", Arrays.asList(42, null)),
                Arguments.of("primitiveLong", List.of(Long.MIN_VALUE, Long.MAX_VALUE)),
                Arguments.of("boxedLong", Arrays.asList(-1L, null)),
                Arguments.of("primitiveFloat", List.of(1.5f, -0.0f, Float.NaN, Float.MAX_VALUE)),
                Arguments.of("boxedFloat", Arrays.asList(Float.NEGATIVE_INFINITY, null)),
                Arguments.of("primitiveDouble", List.of(Math.PI, Double.MIN_VALUE, Double.NaN)),
                Arguments.of("boxedDouble", Arrays.asList(1e300, null)),
                Arguments.of("string", Arrays.asList("", "héllo wörld 🌍", "a\u0000b", null)),
                Arguments.of("bytes", Arrays.asList(new byte[0], new byte[] {0, 1, -1, 127}, null)),
                Arguments.of("color", Arrays.asList(Color.RED, Color.BLUE, null)),
                Arguments.of(
                        "instant",
                        Arrays.asList(
                                Instant.parse("2024-05-01T12:34:56.123456Z"),
                                Instant.EPOCH,
                                Instant.parse("1969-12-31T23:59:59.999999Z"),
                                null)),
                Arguments.of("localDateTime", Arrays.asList(LocalDateTime.parse("2024-05-01T12:34:56.000001"), null)),
                Arguments.of("localDate", Arrays.asList(LocalDate.of(2024, 2, 29), LocalDate.of(1, 1, 1), null)),
                Arguments.of(
                        "duration",
                        Arrays.asList(Duration.ofSeconds(-5, 1000), Duration.ofDays(400), Duration.ZERO, null)),
                Arguments.of(
                        "decimal",
                        Arrays.asList(
                                new BigDecimal("12345678901234567890.123456789012345678"),
                                new BigDecimal("-0.5"),
                                BigDecimal.ZERO,
                                new BigDecimal("100"),
                                null)),
                Arguments.of("strings", Arrays.asList(List.of(), withNullElement, null)),
                Arguments.of(
                        "nestedLists", Arrays.asList(List.of(List.of(1, 2), List.of(), Arrays.asList(3, null)), null)),
                Arguments.of("counts", Arrays.asList(Map.of(), withNullValue, null)),
                Arguments.of("byColor", List.of(Map.of(Color.GREEN, List.of("leaf"), Color.RED, List.of()))),
                Arguments.of("people", List.of(Map.of(1L, ADA, -2L, NOBODY))),
                Arguments.of("maybeString", List.of(Optional.of("x"), Optional.empty())),
                Arguments.of("maybePerson", List.of(Optional.of(ADA), Optional.empty())),
                Arguments.of("optionalInt", List.of(OptionalInt.of(-9), OptionalInt.empty())),
                Arguments.of("optionalLong", List.of(OptionalLong.of(Long.MAX_VALUE), OptionalLong.empty())),
                Arguments.of("optionalDouble", List.of(OptionalDouble.of(0.25), OptionalDouble.empty())),
                Arguments.of("person", Arrays.asList(ADA, NOBODY, null)),
                Arguments.of(
                        "persons", Arrays.asList(List.of(ADA, NOBODY), Arrays.asList(ADA, null), List.of(), null)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("valuesOfEveryType")
    void everyTypeRoundTripsInOneRowAndInABatch(String component, List<Object> values) {
        RowCodec codec = codec(type(component));
        for (Object value : values) {
            List<Object[]> decoded =
                    codec.decode(codec.encode(List.<Object[]>of(new Object[] {value})), DecodeContext.empty());
            assertThat(decoded).hasSize(1);
            assertThat(decoded.get(0)).containsExactly(value);
        }
        List<Object[]> batch = values.stream().map(v -> new Object[] {v}).toList();
        List<Object[]> decoded = codec.decode(codec.encode(batch), DecodeContext.empty());
        assertThat(decoded).hasSameSizeAs(batch);
        for (int i = 0; i < batch.size(); i++) {
            assertThat(decoded.get(i)).as("row %d", i).containsExactly(batch.get(i));
        }
    }

    @Test
    void aThousandRowsOfSeveralColumnsWithNullsAndNestingRoundTrip() {
        RowCodec codec = RowCodec.of(
                new Schema(List.of(
                        MAPPING.field("id", long.class),
                        MAPPING.field("label", String.class),
                        MAPPING.field("person", Person.class),
                        MAPPING.field("seen", type("instant")),
                        MAPPING.field("counts", type("counts")))),
                List.of(long.class, String.class, Person.class, type("instant"), type("counts")),
                MAPPING);
        List<Object[]> rows = IntStream.range(0, 1000)
                .mapToObj(i -> new Object[] {
                    (long) i * 1_000_003L,
                    i % 7 == 0 ? null : "label-" + i,
                    i % 11 == 0
                            ? null
                            : new Person(
                                    "p" + i,
                                    i,
                                    List.of("t" + i, "u" + (i % 3)),
                                    i % 2 == 0
                                            ? Optional.empty()
                                            : Optional.of(new Address("c" + i, LocalDate.ofEpochDay(i))),
                                    i % 5 == 0 ? null : Map.of("s", i / 2.0)),
                    Instant.ofEpochSecond(1_700_000_000L + i, i * 1000L),
                    i % 13 == 0 ? Map.of() : Map.of("n", i)
                })
                .toList();

        byte[] payload = codec.encode(rows);
        List<Object[]> decoded = codec.decode(payload, DecodeContext.empty());

        assertThat(decoded).hasSize(1000);
        for (int i = 0; i < rows.size(); i++) {
            assertThat(decoded.get(i)).as("row %d", i).containsExactly(rows.get(i));
        }
    }

    @Test
    void instantsKeepMicrosecondsAndDecimalsComeBackWithoutPaddingZeros() {
        RowCodec instants = codec(type("instant"));
        Instant precise = Instant.parse("2024-05-01T00:00:00.123456789Z");
        assertThat(instants.decode(instants.encode(List.<Object[]>of(new Object[] {precise})), DecodeContext.empty())
                        .get(0)[0])
                .isEqualTo(Instant.parse("2024-05-01T00:00:00.123456Z"));

        RowCodec decimals = codec(type("decimal"));
        Object decoded = decimals.decode(
                        decimals.encode(List.<Object[]>of(new Object[] {new BigDecimal("1.50")})),
                        DecodeContext.empty())
                .get(0)[0];
        assertThat(decoded).isEqualTo(new BigDecimal("1.5"));
    }

    @Test
    void zeroColumnsStillCarryTheRowCount() {
        RowCodec codec = RowCodec.of(new Schema(List.of()), List.of(), MAPPING);
        List<Object[]> rows =
                codec.decode(codec.encode(List.of(new Object[0], new Object[0], new Object[0])), DecodeContext.empty());
        assertThat(rows).hasSize(3).allSatisfy(row -> assertThat(row).isEmpty());
    }

    @Test
    void aRowCountNoBytesBackIsRefusedNotAllocated() {
        // a few hundred bytes claiming 2^31 - 1 rows: believed, a zero-argument function's worker ran out of memory
        RowCodec codec = RowCodec.of(new Schema(List.of()), List.of(), MAPPING);
        byte[] hostile = ai.chalk.compute.proto.arrow.FlatIpc.write(
                ai.chalk.compute.proto.arrow.ArrowIpc.schemaMessage(new Schema(List.of())),
                Integer.MAX_VALUE,
                List.of());
        assertThatThrownBy(() -> codec.decode(hostile, DecodeContext.empty()))
                .isInstanceOf(ArrowPayloadException.class)
                .hasMessageContaining("claims 2147483647 rows")
                .hasMessageContaining("split the call into smaller batches");
        assertThatThrownBy(() -> codec.decodeWithVectors(hostile, DecodeContext.empty()))
                .isInstanceOf(ArrowPayloadException.class)
                .hasMessageContaining("claims 2147483647 rows");
        byte[] many = ai.chalk.compute.proto.arrow.FlatIpc.write(
                ai.chalk.compute.proto.arrow.ArrowIpc.schemaMessage(new Schema(List.of())),
                RowCodec.MAX_ROWS_WITHOUT_DATA,
                List.of());
        assertThat(codec.decode(many, DecodeContext.empty())).hasSize(RowCodec.MAX_ROWS_WITHOUT_DATA);
    }

    @Test
    void valuesThatDoNotFitAreReportedWithRowColumnAndPath() {
        assertThatThrownBy(() -> codec(int.class).encode(rows(1, null)))
                .isInstanceOf(ArrowPayloadException.class)
                .hasMessage("row 1, column 'v': null in a non-nullable field of type Int(32, true)");
        assertThatThrownBy(() -> codec(String.class).encode(rows("a", 3)))
                .hasMessage("row 1, column 'v': expected String but got java.lang.Integer");
        Map<String, Integer> nullKey = new HashMap<>();
        nullKey.put(null, 1);
        assertThatThrownBy(() -> codec(type("counts")).encode(rows(Map.of("k", 1), nullKey)))
                .hasMessage("row 1, column 'v' at v{key}: a map key is null; Arrow map keys never are");
        assertThatThrownBy(() -> codec(type("persons"))
                        .encode(rows(
                                List.of(
                                        ADA,
                                        new Person(
                                                "x",
                                                1,
                                                Arrays.asList("ok", null),
                                                Optional.empty(),
                                                Map.of("bad", Double.NaN))),
                                List.of("not a person"))))
                .hasMessage("row 1, column 'v' at v[0]: expected Fixtures.Person but got java.lang.String");
        assertThatThrownBy(() -> codec(type("decimal")).encode(rows(new BigDecimal("0.1234567890123456789"))))
                .hasMessage("row 0, column 'v': 0.1234567890123456789 has more than 18 decimal places, the scale of "
                        + "Decimal(38, 18, 128)");
        assertThatThrownBy(() -> codec(type("decimal")).encode(rows(new BigDecimal("123456789012345678901"))))
                .hasMessage("row 0, column 'v': 123456789012345678901 has more digits than Decimal(38, 18, 128) holds");
        assertThatThrownBy(() -> codec(type("primitiveInt")).encode(List.<Object[]>of(new Object[] {1, 2})))
                .hasMessage("row 0 has 2 values but the schema has 1 columns");
    }

    @Test
    void payloadsOfDifferentSchemasReadInTurnEachWithItsOwnSchema() {
        // schemas are parsed once per distinct message and remembered: payloads of other schemas, and payloads whose
        // schemas differ only in metadata, in turn, must each still read with their own
        RowCodec narrow =
                RowCodec.of(new Schema(List.of(MAPPING.field("query", String.class))), List.of(String.class), MAPPING);
        RowCodec wide = RowCodec.of(
                new Schema(List.of(MAPPING.field("unused", long.class), MAPPING.field("query", String.class))),
                List.of(long.class, String.class),
                MAPPING);
        RowCodec withDefault = RowCodec.of(
                new Schema(List.of(MAPPING.field("query", String.class, Map.of(ChalkMetadata.DEFAULT, "\"dogs\"")))),
                List.of(String.class),
                MAPPING);
        RowCodec reader = RowCodec.of(
                new Schema(List.of(
                        MAPPING.field("query", String.class),
                        MAPPING.field("unused", long.class, Map.of(ChalkMetadata.DEFAULT, "0")))),
                List.of(String.class, long.class),
                MAPPING);
        for (int round = 0; round < 3; round++) {
            List<Object[]> a = reader.decode(
                    narrow.encode(List.<Object[]>of(new Object[] {"cats" + round})), DecodeContext.empty());
            List<Object[]> b = reader.decode(
                    wide.encode(List.<Object[]>of(new Object[] {7L + round, "owls"})), DecodeContext.empty());
            List<Object[]> c = withDefault.decode(
                    withDefault.encode(List.<Object[]>of(new Object[] {"eels"})), DecodeContext.empty());
            assertThat(a.get(0)).containsExactly("cats" + round, 0L);
            assertThat(b.get(0)).containsExactly("owls", 7L + round);
            assertThat(c.get(0)).containsExactly("eels");
        }
    }

    @Test
    void columnsAreMatchedByNameExtraOnesIgnoredAndMissingOnesTakeTheirDefault() {
        RowCodec caller = RowCodec.of(
                new Schema(List.of(MAPPING.field("unused", String.class), MAPPING.field("query", String.class))),
                List.of(String.class, String.class),
                MAPPING);
        byte[] payload = caller.encode(rows2("ignored", "cats"));

        RowCodec worker = RowCodec.of(
                new Schema(List.of(
                        MAPPING.field("query", String.class),
                        MAPPING.field("limit", int.class, Map.of(ChalkMetadata.DEFAULT, "10")),
                        MAPPING.field("region", type("maybeString"), Map.of(ChalkMetadata.DEFAULT, "null")))),
                List.of(String.class, int.class, type("maybeString")),
                MAPPING);
        assertThat(worker.decode(payload, DecodeContext.empty()).get(0)).containsExactly("cats", 10, Optional.empty());

        RowCodec strict = RowCodec.of(
                new Schema(List.of(MAPPING.field("query", String.class), MAPPING.field("limit", int.class))),
                List.of(String.class, int.class),
                MAPPING);
        assertThatThrownBy(() -> strict.decode(payload, DecodeContext.empty()))
                .hasMessage(
                        "the payload has no column 'limit' and it has no default; the payload's columns are [unused, query]");
    }

    @Test
    void aDefaultThatIsNotAValueOfItsTypeIsRejectedUpFront() {
        Schema schema =
                new Schema(List.of(MAPPING.field("limit", int.class, Map.of(ChalkMetadata.DEFAULT, "\"ten\""))));
        assertThatThrownBy(() -> RowCodec.of(schema, List.of(int.class), MAPPING))
                .hasMessage("the default of column 'limit' is \"ten\": \"ten\" is not a value of type int");
    }

    @Test
    void aSingleColumnIsUsedWhateverItsName() {
        RowCodec python =
                RowCodec.of(new Schema(List.of(MAPPING.field("result", String.class))), List.of(String.class), MAPPING);
        assertThat(codec(String.class)
                        .decode(python.encode(rows("from python")), DecodeContext.empty())
                        .get(0))
                .containsExactly("from python");
    }

    @Test
    void payloadsOfOtherWidthsUnitsAndLargeTypesReadIntoTheDeclaredJavaTypes() {
        // a schema as another runtime may write it: large strings and lists, int64 for Java int, nanosecond times
        Schema foreign = new Schema(List.of(
                new Field("text", FieldType.nullable(ArrowType.LargeUtf8.INSTANCE), null),
                new Field("count", FieldType.nullable(new ArrowType.Int(64, true)), null),
                new Field("at", FieldType.nullable(new ArrowType.Timestamp(TimeUnit.NANOSECOND, "UTC")), null),
                new Field(
                        "tags",
                        FieldType.nullable(ArrowType.LargeList.INSTANCE),
                        List.of(new Field("item", FieldType.nullable(ArrowType.LargeUtf8.INSTANCE), null))),
                new Field(
                        "day",
                        FieldType.nullable(new ArrowType.Date(org.apache.arrow.vector.types.DateUnit.MILLISECOND)),
                        null),
                new Field("ratio", FieldType.nullable(new ArrowType.Int(32, true)), null)));
        List<Type> javaTypes =
                List.of(String.class, int.class, Instant.class, type("strings"), LocalDate.class, double.class);
        Instant at = Instant.parse("2024-05-01T00:00:00.123456789Z");
        Object[] row = {"grüße", 7, at, List.of("a", "b"), LocalDate.of(2024, 5, 1), 3};
        byte[] payload = RowCodec.of(
                        foreign,
                        List.of(String.class, int.class, Instant.class, type("strings"), LocalDate.class, int.class),
                        MAPPING)
                .encode(List.<Object[]>of(row));

        Schema ours = new Schema(List.of(
                MAPPING.field("text", String.class),
                MAPPING.field("count", int.class),
                MAPPING.field("at", Instant.class),
                MAPPING.field("tags", type("strings")),
                MAPPING.field("day", LocalDate.class),
                MAPPING.field("ratio", double.class)));
        assertThat(RowCodec.of(ours, javaTypes, MAPPING)
                        .decode(payload, DecodeContext.empty())
                        .get(0))
                .containsExactly("grüße", 7, at, List.of("a", "b"), LocalDate.of(2024, 5, 1), 3.0);
    }

    @Test
    void numbersThatDoNotFitTheJavaTypeAreRefusedNotCut() {
        Schema wide = new Schema(List.of(MAPPING.field("v", long.class)));
        byte[] payload = RowCodec.of(wide, List.of(long.class), MAPPING).encode(rows(1L << 40));
        assertThatThrownBy(() -> codec(int.class).decode(payload, DecodeContext.empty()))
                .hasMessage("row 0, column 'v': 1099511627776 does not fit in a Java int");
        Schema narrow = new Schema(List.of(new Field("v", FieldType.notNullable(new ArrowType.Int(16, true)), null)));
        assertThatThrownBy(
                        () -> RowCodec.of(narrow, List.of(int.class), MAPPING).encode(rows(70_000)))
                .hasMessage("row 0, column 'v': 70000 does not fit in Int(16, true)");
    }

    @Test
    void anIpcFileDecodesLikeAStreamAndGarbageIsReported() throws Exception {
        Schema schema = new Schema(List.of(
                new Field("text", FieldType.nullable(ArrowType.LargeUtf8.INSTANCE), null),
                new Field("n", FieldType.nullable(new ArrowType.Int(64, true)), null)));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        // the file layout as ArrowFileWriter writes it, through a channel that needs no --add-opens on JDK 17
        try (BufferAllocator allocator = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
                WriteChannel channel = new HeapChannel(Channels.newChannel(out))) {
            channel.write("ARROW1".getBytes(StandardCharsets.US_ASCII));
            channel.align();
            MessageSerializer.serialize(channel, schema);
            List<ArrowBlock> blocks = new ArrayList<>();
            for (int batch = 0; batch < 2; batch++) {
                root.allocateNew();
                ((LargeVarCharVector) root.getVector("text"))
                        .setSafe(0, ("batch " + batch).getBytes(StandardCharsets.UTF_8));
                ((BigIntVector) root.getVector("n")).setSafe(0, batch);
                root.setRowCount(1);
                try (ArrowRecordBatch records = new VectorUnloader(root).getRecordBatch()) {
                    blocks.add(MessageSerializer.serialize(channel, records));
                }
            }
            channel.writeIntLittleEndian(MessageSerializer.IPC_CONTINUATION_TOKEN);
            channel.writeIntLittleEndian(0);
            long footerStart = channel.getCurrentPosition();
            channel.write(new ArrowFooter(schema, List.of(), blocks), false);
            channel.writeIntLittleEndian((int) (channel.getCurrentPosition() - footerStart));
            channel.write("ARROW1".getBytes(StandardCharsets.US_ASCII));
        }
        RowCodec codec = RowCodec.of(
                new Schema(List.of(MAPPING.field("text", String.class), MAPPING.field("n", long.class))),
                List.of(String.class, long.class),
                MAPPING);
        List<Object[]> rows = codec.decode(out.toByteArray(), DecodeContext.empty());
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0)).containsExactly("batch 0", 0L);
        assertThat(rows.get(1)).containsExactly("batch 1", 1L);

        assertThatThrownBy(() -> codec.decode("hello".getBytes(StandardCharsets.UTF_8), DecodeContext.empty()))
                .isInstanceOf(ArrowPayloadException.class)
                .hasMessageStartingWith("the payload is not a readable Arrow IPC stream (5 bytes): ");
    }

    @Test
    void enumsReadBackByNameAndUnknownNamesAreReported() {
        Schema text = new Schema(List.of(MAPPING.field("v", String.class)));
        byte[] payload = RowCodec.of(text, List.of(String.class), MAPPING).encode(rows("GREEN", "PURPLE"));
        RowCodec colors = codec(Color.class);
        assertThatThrownBy(() -> colors.decode(payload, DecodeContext.empty()))
                .hasMessage(
                        "row 1, column 'v': 'PURPLE' is not a constant of ai.chalk.compute.function.arrow.Fixtures$Color "
                                + "[RED, GREEN, BLUE]");
    }

    /** A write channel that copies Arrow buffers through the heap instead of {@code nioBuffer()}. */
    private static final class HeapChannel extends WriteChannel {
        HeapChannel(java.nio.channels.WritableByteChannel out) {
            super(out);
        }

        @Override
        public void write(org.apache.arrow.memory.ArrowBuf buffer) throws java.io.IOException {
            byte[] bytes = new byte[(int) buffer.readableBytes()];
            buffer.getBytes(buffer.readerIndex(), bytes);
            write(java.nio.ByteBuffer.wrap(bytes));
        }
    }

    private static RowCodec codec(Type javaType) {
        return RowCodec.of(new Schema(List.of(MAPPING.field("v", javaType))), List.of(javaType), MAPPING);
    }

    private static List<Object[]> rows(Object... values) {
        return Arrays.stream(values).map(v -> new Object[] {v}).toList();
    }

    private static List<Object[]> rows2(Object a, Object b) {
        return List.<Object[]>of(new Object[] {a, b});
    }
}
