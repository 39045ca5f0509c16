package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.arrow.v1.ArrowType;
import ai.chalk.compute.proto.arrow.v1.EmptyMessage;
import ai.chalk.compute.proto.arrow.v1.Field;
import ai.chalk.compute.proto.arrow.v1.Schema;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
            assertThat(RowPayloads.decode(flat)).isEqualTo(RowPayloads.decodeWithVectors(flat));
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
            List<Object> flat = RowPayloads.decode(answer);
            List<Object> vectors = RowPayloads.decodeWithVectors(answer);
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

    private static Field field(String name, ArrowType.Builder type) {
        return Field.newBuilder()
                .setName(name)
                .setArrowType(type)
                .setNullable(true)
                .build();
    }
}
