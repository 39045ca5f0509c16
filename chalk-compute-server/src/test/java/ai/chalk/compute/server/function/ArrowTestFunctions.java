package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.arrow.ArrowIpc;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.Text;

/**
 * Functions of {@link TestFunctionWorker} that compute on Arrow payloads as the protocol's worker does (one row per
 * call in, one result row per call out), so evaluation runs can be tested with real tasks and scorers:
 * {@code shout(question)} upper-cases and fails a row whose question contains "fail"; {@code dawdle(question)} waits
 * 300 ms per call, then shouts; {@code graded(output, expected)} answers an {@code EvaluationScorerResult}
 * ({@code {score, metadata}}, 1 for a case-insensitive match, else 0.25, with the output's length as metadata);
 * {@code ratio(output, expected)} answers a number (shorter length / longer length); {@code panel(output)} answers a
 * list of two results (1 and 0.5).
 */
final class ArrowTestFunctions {

    private ArrowTestFunctions() {}

    /** Whether {@code name} is one of these functions. */
    static boolean serves(String name) {
        return List.of("shout", "dawdle", "graded", "ratio", "panel").contains(name);
    }

    /** The answer of {@code name} to the payload; a row's failure fails the call, as a real worker's batch. */
    static byte[] call(String name, byte[] payload) throws Exception {
        List<Map<String, Object>> rows = rows(payload);
        return switch (name) {
            case "dawdle" -> {
                Thread.sleep(300);
                yield strings(rows.stream()
                        .map(r -> shout((String) r.get("question")))
                        .toList());
            }
            case "shout" ->
                strings(rows.stream()
                        .map(r -> shout((String) r.get("question")))
                        .toList());
            case "graded" -> {
                List<double[]> scores = new ArrayList<>();
                List<String> metadata = new ArrayList<>();
                for (Map<String, Object> r : rows) {
                    String output = (String) r.get("output");
                    scores.add(new double[] {output.equalsIgnoreCase((String) r.get("expected")) ? 1 : 0.25});
                    metadata.add("{\"length\":" + output.length() + "}");
                }
                yield results(scores, List.of(metadata));
            }
            case "ratio" -> {
                List<Double> out = new ArrayList<>();
                for (Map<String, Object> r : rows) {
                    int a = ((String) r.get("output")).length();
                    int b = ((String) r.get("expected")).length();
                    out.add(Math.max(a, b) == 0 ? 1.0 : (double) Math.min(a, b) / Math.max(a, b));
                }
                yield doubles(out);
            }
            case "panel" -> {
                List<double[]> scores = new ArrayList<>();
                for (int i = 0; i < rows.size(); i++) {
                    scores.add(new double[] {1, 0.5});
                }
                yield results(scores, List.of());
            }
            default -> throw new IllegalArgumentException("no function " + name);
        };
    }

    private static String shout(String question) {
        if (question.contains("fail")) {
            throw new IllegalStateException("cannot shout '" + question + "'");
        }
        return question.toUpperCase(Locale.ROOT);
    }

    private static List<Map<String, Object>> rows(byte[] payload) {
        List<Map<String, Object>> rows = new ArrayList<>();
        try (BufferAllocator a = new RootAllocator()) {
            ArrowIpc.read(payload, a, root -> {
                for (int i = 0; i < root.getRowCount(); i++) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    for (FieldVector v : root.getFieldVectors()) {
                        Object value = v.getObject(i);
                        row.put(v.getName(), value instanceof Text t ? t.toString() : value);
                    }
                    rows.add(row);
                }
            });
        }
        return rows;
    }

    private static byte[] strings(List<String> values) throws IOException {
        Schema schema = new Schema(List.of(Field.nullable("output", ArrowType.Utf8.INSTANCE)));
        try (BufferAllocator a = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, a)) {
            root.allocateNew();
            VarCharVector v = (VarCharVector) root.getVector(0);
            for (int i = 0; i < values.size(); i++) {
                v.setSafe(i, values.get(i).getBytes(StandardCharsets.UTF_8));
            }
            root.setRowCount(values.size());
            return write(root);
        }
    }

    private static byte[] doubles(List<Double> values) throws IOException {
        Schema schema = new Schema(List.of(Field.nullable("output", float64())));
        try (BufferAllocator a = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, a)) {
            root.allocateNew();
            Float8Vector v = (Float8Vector) root.getVector(0);
            for (int i = 0; i < values.size(); i++) {
                v.setSafe(i, values.get(i));
            }
            root.setRowCount(values.size());
            return write(root);
        }
    }

    /**
     * One scorer result per row when each row has one score ({@code metadata.get(0)} its metadata), else a list of
     * results per row (no metadata).
     */
    private static byte[] results(List<double[]> scores, List<List<String>> metadata) throws IOException {
        Field struct = new Field(
                "result",
                FieldType.nullable(ArrowType.Struct.INSTANCE),
                List.of(Field.notNullable("score", float64()), Field.nullable("metadata", ArrowType.Utf8.INSTANCE)));
        boolean single = !metadata.isEmpty();
        Field column = single
                ? new Field("output", struct.getFieldType(), struct.getChildren())
                : new Field("output", FieldType.nullable(ArrowType.List.INSTANCE), List.of(struct));
        try (BufferAllocator a = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(new Schema(List.of(column)), a)) {
            root.allocateNew();
            if (single) {
                StructVector s = (StructVector) root.getVector(0);
                for (int i = 0; i < scores.size(); i++) {
                    setResult(s, i, scores.get(i)[0], metadata.get(0).get(i));
                }
            } else {
                ListVector l = (ListVector) root.getVector(0);
                StructVector s = (StructVector) l.getDataVector();
                for (int i = 0; i < scores.size(); i++) {
                    int offset = l.startNewValue(i);
                    for (int k = 0; k < scores.get(i).length; k++) {
                        setResult(s, offset + k, scores.get(i)[k], null);
                    }
                    l.endValue(i, scores.get(i).length);
                }
            }
            root.setRowCount(scores.size());
            return write(root);
        }
    }

    private static void setResult(StructVector s, int index, double score, String metadata) {
        s.getChild("score", Float8Vector.class).setSafe(index, score);
        VarCharVector m = s.getChild("metadata", VarCharVector.class);
        if (metadata == null) {
            m.setNull(index);
        } else {
            m.setSafe(index, metadata.getBytes(StandardCharsets.UTF_8));
        }
        s.setIndexDefined(index);
    }

    private static ArrowType float64() {
        return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
    }

    private static byte[] write(VectorSchemaRoot root) {
        return ArrowIpc.write(root);
    }
}
