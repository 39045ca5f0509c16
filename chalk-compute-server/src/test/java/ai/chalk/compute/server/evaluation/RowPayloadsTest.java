package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.arrow.ArrowIpc;
import ai.chalk.compute.proto.arrow.FlatIpc;
import ai.chalk.compute.proto.arrow.v1.ArrowType;
import ai.chalk.compute.proto.arrow.v1.EmptyMessage;
import ai.chalk.compute.proto.arrow.v1.Field;
import ai.chalk.compute.proto.arrow.v1.Schema;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.NullVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.junit.jupiter.api.Test;

/** A run's batches of plain scalars are written and read without Arrow's vectors, to the same bytes and values. */
class RowPayloadsTest {

    private static final EmptyMessage E = EmptyMessage.getDefaultInstance();

    @Test
    void scalarBatchesAreWrittenByteForByteAsTheVectorsWriteThemAndReadBackAlike() throws Exception {
        RowPayloads payloads = new RowPayloads(Schema.newBuilder()
                .addColumns(field("id", ArrowType.newBuilder().setInt64(E)))
                .addColumns(field("question", ArrowType.newBuilder().setUtf8(E)))
                .addColumns(field("weight", ArrowType.newBuilder().setFloat64(E)))
                .addColumns(field("ok", ArrowType.newBuilder().setBool(E)))
                .addColumns(field("small", ArrowType.newBuilder().setInt16(E)))
                .addColumns(field("ratio", ArrowType.newBuilder().setFloat32(E)))
                .addColumns(field("blob", ArrowType.newBuilder().setBinary(E)))
                .build());
        for (int n : List.of(1, 9, 64, 257)) {
            List<Object[]> rows = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Map<String, Object> row = new HashMap<>();
                row.put("id", i % 5 == 2 ? null : (Object) ((long) i * 7));
                row.put("question", i % 7 == 3 ? null : "q-" + i + "-é");
                row.put("weight", i % 3 == 0 ? null : (Object) (i / 4.0));
                row.put("ok", i % 4 == 1 ? null : (Object) (i % 2 == 0));
                row.put("small", String.valueOf(-i));
                row.put("ratio", i / 8.0);
                row.put("blob", i % 6 == 5 ? null : new byte[] {(byte) i, 1});
                rows.add(payloads.arguments(row));
            }
            byte[] flat = payloads.encode(rows);
            assertThat(flat).as("%d rows", n).isEqualTo(payloads.encodeWithVectors(rows));
            // each column, read back as the first column of an answer, both ways
            assertThat(RowPayloads.decode(flat, n)).isEqualTo(RowPayloads.decodeWithVectors(flat, n));
        }
    }

    @Test
    void answersOfEveryScalarTypeReadAsTheVectorsReadThem() throws Exception {
        for (ArrowType.Builder type : List.of(
                ArrowType.newBuilder().setInt8(E),
                ArrowType.newBuilder().setInt32(E),
                ArrowType.newBuilder().setInt64(E),
                ArrowType.newBuilder().setFloat64(E),
                ArrowType.newBuilder().setBool(E),
                ArrowType.newBuilder().setUtf8(E),
                ArrowType.newBuilder().setBinary(E))) {
            RowPayloads payloads = new RowPayloads(
                    Schema.newBuilder().addColumns(field("v", type)).build());
            List<Object[]> rows = new ArrayList<>();
            for (Object v : Arrays.asList(1, null, 0, 42)) {
                Map<String, Object> row = new HashMap<>();
                row.put("v", v);
                rows.add(payloads.arguments(row));
            }
            byte[] answer = payloads.encode(rows);
            assertThat(answer).isEqualTo(payloads.encodeWithVectors(rows));
            List<Object> flat = RowPayloads.decode(answer, 4);
            List<Object> vectors = RowPayloads.decodeWithVectors(answer, 4);
            assertThat(flat)
                    .as("%s", type)
                    .hasSize(4)
                    .usingRecursiveComparison()
                    .isEqualTo(vectors);
            for (int i = 0; i < flat.size(); i++) {
                assertThat(flat.get(i) == null ? null : flat.get(i).getClass())
                        .as("%s row %d", type, i)
                        .isEqualTo(
                                vectors.get(i) == null ? null : vectors.get(i).getClass());
            }
        }
    }

    @Test
    void scorerResultStructsReadInPlaceAsTheVectorsReadThem() {
        for (int n : List.of(1, 9, 64, 513)) {
            try (BufferAllocator allocator = new RootAllocator();
                    VectorSchemaRoot root = VectorSchemaRoot.create(
                            new org.apache.arrow.vector.types.pojo.Schema(List.of(resultField("result"), flag("ok"))),
                            allocator)) {
                root.allocateNew();
                StructVector result = (StructVector) root.getVector(0);
                Float8Vector score = (Float8Vector) result.getChild("score");
                VarCharVector metadata = (VarCharVector) result.getChild("metadata");
                BitVector ok = (BitVector) root.getVector(1);
                for (int i = 0; i < n; i++) {
                    if (i % 11 == 4) {
                        result.setNull(i); // a scorer that answered no result at all
                        ok.setSafe(i, 0);
                        continue;
                    }
                    result.setIndexDefined(i);
                    if (i % 5 == 3) {
                        score.setNull(i);
                    } else {
                        score.setSafe(i, i / 7.0);
                    }
                    if (i % 3 == 1) {
                        metadata.setNull(i);
                    } else {
                        metadata.setSafe(
                                i, (i % 2 == 0 ? "" : "{\"why\":\"é" + i + "\"}").getBytes(StandardCharsets.UTF_8));
                    }
                    ok.setSafe(i, 1);
                }
                root.setRowCount(n);
                byte[] answer = ArrowIpc.write(root);

                assertThat(FlatIpc.read(answer)).as("read in place").isNotNull();
                List<Object> flat = RowPayloads.decode(answer, n);
                assertThat(flat).as("%d rows", n).isEqualTo(RowPayloads.decodeWithVectors(answer, n));
                Map<String, Object> expected = new LinkedHashMap<>();
                expected.put("score", n > 2 ? 2 / 7.0 : null);
                expected.put("metadata", n > 2 ? "" : null);
                if (n > 2) {
                    assertThat(flat.get(2)).isEqualTo(expected);
                }
                if (n > 4) {
                    assertThat(flat.get(4)).isNull();
                }
            }
        }
    }

    @Test
    void anAnswerIsReadOnlyForTheRowsAskedAndUpToItsValues() {
        // deployed code writes the answers: a few bytes claiming 2^31 rows of a null type, or one row listing 2^31
        // nulls, had the server build lists of billions of entries
        try (BufferAllocator allocator = new RootAllocator();
                NullVector nulls = new NullVector("v");
                ListVector list = ListVector.empty("v", allocator)) {
            nulls.setValueCount(Integer.MAX_VALUE);
            byte[] manyRows =
                    ArrowIpc.write(new VectorSchemaRoot(List.of(nulls.getField()), List.of(nulls), Integer.MAX_VALUE));
            assertThatThrownBy(() -> RowPayloads.decode(manyRows, 64))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("it answered 2147483647 rows for 64 arguments");

            list.addOrGetVector(FieldType.nullable(org.apache.arrow.vector.types.pojo.ArrowType.Null.INSTANCE));
            list.allocateNew();
            list.startNewValue(0);
            list.endValue(0, Integer.MAX_VALUE - 1);
            list.setValueCount(1);
            byte[] longList = ArrowIpc.write(new VectorSchemaRoot(List.of(list.getField()), List.of(list), 1));
            assertThatThrownBy(() -> RowPayloads.decode(longList, 1))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("more than " + RowPayloads.MAX_VALUES + " values");

            try (org.apache.arrow.vector.complex.FixedSizeListVector fixed =
                    org.apache.arrow.vector.complex.FixedSizeListVector.empty("v", 1 << 30, allocator)) {
                fixed.addOrGetVector(FieldType.nullable(org.apache.arrow.vector.types.pojo.ArrowType.Null.INSTANCE));
                fixed.allocateNew();
                fixed.setNotNull(0);
                fixed.setValueCount(1);
                byte[] fixedList = ArrowIpc.write(new VectorSchemaRoot(List.of(fixed.getField()), List.of(fixed), 1));
                assertThatThrownBy(() -> RowPayloads.decode(fixedList, 1))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("more than " + RowPayloads.MAX_VALUES + " values");
            }

            // a flat answer of other rows than asked: refused before its rows are read
            RowPayloads payloads = new RowPayloads(Schema.newBuilder()
                    .addColumns(field("v", ArrowType.newBuilder().setBool(E)))
                    .build());
            byte[] threeRows = payloads.encode(List.of(new Object[] {true}, new Object[] {false}, new Object[] {true}));
            assertThat(FlatIpc.read(threeRows)).isNotNull();
            assertThatThrownBy(() -> RowPayloads.decode(threeRows, 2))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("it answered 3 rows for 2 arguments");
            assertThat(RowPayloads.decode(threeRows, 3)).containsExactly(true, false, true);
        }
    }

    @Test
    void structsOfStructsAreReadByTheVectors() {
        try (BufferAllocator allocator = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(
                        new org.apache.arrow.vector.types.pojo.Schema(
                                List.of(new org.apache.arrow.vector.types.pojo.Field(
                                        "outer",
                                        FieldType.nullable(
                                                org.apache.arrow.vector.types.pojo.ArrowType.Struct.INSTANCE),
                                        List.of(resultField("inner"), count("n"))))),
                        allocator)) {
            root.allocateNew();
            StructVector outer = (StructVector) root.getVector(0);
            StructVector inner = (StructVector) outer.getChild("inner");
            BigIntVector count = (BigIntVector) outer.getChild("n");
            for (int i = 0; i < 3; i++) {
                outer.setIndexDefined(i);
                inner.setIndexDefined(i);
                ((Float8Vector) inner.getChild("score")).setSafe(i, 1.0);
                ((VarCharVector) inner.getChild("metadata")).setSafe(i, "{}".getBytes(StandardCharsets.UTF_8));
                count.setSafe(i, i);
            }
            root.setRowCount(3);
            byte[] answer = ArrowIpc.write(root);

            assertThat(FlatIpc.read(answer))
                    .as("declined: deeper than one struct")
                    .isNull();
            Map<String, Object> innerValue = new LinkedHashMap<>();
            innerValue.put("score", 1.0);
            innerValue.put("metadata", "{}");
            Map<String, Object> first = new LinkedHashMap<>();
            first.put("inner", innerValue);
            first.put("n", 0L);
            assertThat(RowPayloads.decode(answer, 3)).hasSize(3).first().isEqualTo(first);
        }
    }

    /** A scorer's answer: {@code {score: float64, metadata: utf8}}, as EvaluationScorerResult travels. */
    private static org.apache.arrow.vector.types.pojo.Field resultField(String name) {
        return new org.apache.arrow.vector.types.pojo.Field(
                name,
                FieldType.nullable(org.apache.arrow.vector.types.pojo.ArrowType.Struct.INSTANCE),
                List.of(
                        new org.apache.arrow.vector.types.pojo.Field(
                                "score",
                                FieldType.nullable(new org.apache.arrow.vector.types.pojo.ArrowType.FloatingPoint(
                                        FloatingPointPrecision.DOUBLE)),
                                null),
                        new org.apache.arrow.vector.types.pojo.Field(
                                "metadata",
                                FieldType.nullable(org.apache.arrow.vector.types.pojo.ArrowType.Utf8.INSTANCE),
                                null)));
    }

    private static org.apache.arrow.vector.types.pojo.Field flag(String name) {
        return new org.apache.arrow.vector.types.pojo.Field(
                name, FieldType.nullable(org.apache.arrow.vector.types.pojo.ArrowType.Bool.INSTANCE), null);
    }

    private static org.apache.arrow.vector.types.pojo.Field count(String name) {
        return new org.apache.arrow.vector.types.pojo.Field(
                name, FieldType.nullable(new org.apache.arrow.vector.types.pojo.ArrowType.Int(64, true)), null);
    }

    private static Field field(String name, ArrowType.Builder type) {
        return Field.newBuilder()
                .setName(name)
                .setArrowType(type)
                .setNullable(true)
                .build();
    }
}
