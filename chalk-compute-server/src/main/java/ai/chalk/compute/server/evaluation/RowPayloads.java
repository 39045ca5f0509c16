package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.arrow.ArrowIpc;
import ai.chalk.compute.proto.arrow.FlatIpc;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.LargeVarBinaryVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.Text;
import org.jspecify.annotations.Nullable;

/**
 * The Arrow IPC payloads of an evaluation run's calls, as docs/functions-protocol.md section 3 describes them: dataset
 * rows encoded with a function's input schema (its parameters take the columns of their names), results decoded from
 * the first column of the answer whatever its name. The server knows a function only by its Arrow schema, not by Java
 * types, so a column's value is converted to the parameter's Arrow type here (a CSV's {@code 4} to a {@code float64},
 * a number to {@code utf8}); a value that cannot be is that row's failure, not the batch's.
 */
final class RowPayloads {

    /** A row value that does not fit its parameter. */
    static final class UnfitValueException extends Exception {
        UnfitValueException(String message) {
            super(message);
        }
    }

    /**
     * The root of every payload's allocator: a root allocator per payload cost each batch its setup; a child per
     * payload still checks on close that the payload's buffers were all released.
     */
    private static final BufferAllocator ROOT = new RootAllocator();

    private final Schema schema;
    /** The schema's IPC message, when every parameter is a flat scalar ({@link #encodeFlat}); otherwise null. */
    private final byte @Nullable [] schemaMessage;

    /** The payloads of a function with this input schema. */
    RowPayloads(ai.chalk.compute.proto.arrow.v1.Schema input) {
        List<Field> fields = new ArrayList<>();
        for (ai.chalk.compute.proto.arrow.v1.Field f : input.getColumnsList()) {
            fields.add(field(f));
        }
        this.schema = new Schema(fields);
        this.schemaMessage =
                fields.stream().allMatch(f -> FlatIpc.Layout.of(f) != null) ? ArrowIpc.schemaMessage(schema) : null;
    }

    /** The parameters' names, in order. */
    List<String> parameters() {
        return schema.getFields().stream().map(Field::getName).toList();
    }

    /**
     * A row's arguments, converted to the parameters' types: the value of the column (or extra, such as
     * {@code output}) of each parameter's name.
     *
     * @throws UnfitValueException when a value does not convert, naming the parameter
     */
    Object[] arguments(Map<String, @Nullable Object> row) throws UnfitValueException {
        List<Field> fields = schema.getFields();
        Object[] out = new Object[fields.size()];
        for (int i = 0; i < out.length; i++) {
            Field f = fields.get(i);
            Object value = row.get(f.getName());
            try {
                out[i] = value == null ? null : convert(value, f.getType());
            } catch (IllegalArgumentException e) {
                throw new UnfitValueException(
                        "parameter '" + f.getName() + "' (" + f.getType() + "): " + e.getMessage());
            }
            if (out[i] == null && !f.isNullable()) {
                throw new UnfitValueException("parameter '" + f.getName() + "' takes no null, and the row's value is");
            }
        }
        return out;
    }

    /** The rows' arguments, from {@link #arguments}, as one Arrow IPC stream. */
    byte[] encode(List<Object[]> rows) {
        byte[] flat = encodeFlat(rows);
        return flat != null ? flat : encodeWithVectors(rows);
    }

    /**
     * {@link #encode} without Arrow's vectors ({@link FlatIpc}), the same bytes, for rows of plain scalars; {@code null}
     * for anything else (other types, a value out of its column's range), which the vectors write or refuse.
     */
    private byte @Nullable [] encodeFlat(List<Object[]> rows) {
        int n = rows.size();
        List<Field> fields = schema.getFields();
        if (n == 0 || schemaMessage == null) {
            return null;
        }
        List<FlatIpc.Column> columns = new ArrayList<>(fields.size());
        for (int c = 0; c < fields.size(); c++) {
            ArrowType type = fields.get(c).getType();
            byte[] validity = new byte[(n + 7) / 8];
            int nulls = 0;
            for (int r = 0; r < n; r++) {
                if (rows.get(r)[c] == null) {
                    nulls++;
                } else {
                    validity[r >>> 3] |= (byte) (1 << (r & 7));
                }
            }
            FlatIpc.Column column;
            if (type instanceof ArrowType.Utf8 || type instanceof ArrowType.Binary) {
                byte[][] each = new byte[n][];
                int total = 0;
                for (int r = 0; r < n; r++) {
                    Object v = rows.get(r)[c];
                    if (v != null) {
                        each[r] = v instanceof String s ? s.getBytes(StandardCharsets.UTF_8) : (byte[]) v;
                        total = Math.addExact(total, each[r].length);
                    }
                }
                byte[] offsets = new byte[4 * (n + 1)];
                byte[] data = new byte[total];
                ByteBuffer o = ByteBuffer.wrap(offsets).order(ByteOrder.LITTLE_ENDIAN);
                int at = 0;
                for (int r = 0; r < n; r++) {
                    if (each[r] != null) {
                        System.arraycopy(each[r], 0, data, at, each[r].length);
                        at += each[r].length;
                    }
                    o.putInt(4 * (r + 1), at);
                }
                column = new FlatIpc.Column(nulls, validity, offsets, data, data.length);
            } else if (type instanceof ArrowType.Bool) {
                byte[] bits = new byte[(n + 7) / 8];
                for (int r = 0; r < n; r++) {
                    if (Boolean.TRUE.equals(rows.get(r)[c])) {
                        bits[r >>> 3] |= (byte) (1 << (r & 7));
                    }
                }
                column = new FlatIpc.Column(nulls, validity, null, bits, bits.length);
            } else if (type instanceof ArrowType.Int i && i.getIsSigned()) {
                int width = i.getBitWidth() / 8;
                long min = width == 8 ? Long.MIN_VALUE : -(1L << (8 * width - 1));
                long max = width == 8 ? Long.MAX_VALUE : (1L << (8 * width - 1)) - 1;
                ByteBuffer out = ByteBuffer.allocate(width * n).order(ByteOrder.LITTLE_ENDIAN);
                for (int r = 0; r < n; r++) {
                    long v = rows.get(r)[c] == null ? 0 : (Long) rows.get(r)[c];
                    if (v < min || v > max) {
                        return null; // the vectors' way refuses it
                    }
                    switch (width) {
                        case 1 -> out.put(r, (byte) v);
                        case 2 -> out.putShort(2 * r, (short) v);
                        case 4 -> out.putInt(4 * r, (int) v);
                        default -> out.putLong(8 * r, v);
                    }
                }
                column = new FlatIpc.Column(nulls, validity, null, out.array(), width * n);
            } else if (type instanceof ArrowType.FloatingPoint f
                    && f.getPrecision() != org.apache.arrow.vector.types.FloatingPointPrecision.HALF) {
                boolean single = f.getPrecision() == org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE;
                int width = single ? 4 : 8;
                ByteBuffer out = ByteBuffer.allocate(width * n).order(ByteOrder.LITTLE_ENDIAN);
                for (int r = 0; r < n; r++) {
                    double v = rows.get(r)[c] == null ? 0 : (Double) rows.get(r)[c];
                    if (single) {
                        out.putFloat(4 * r, (float) v);
                    } else {
                        out.putDouble(8 * r, v);
                    }
                }
                column = new FlatIpc.Column(nulls, validity, null, out.array(), width * n);
            } else {
                return null;
            }
            columns.add(column);
        }
        return FlatIpc.write(schemaMessage, n, columns);
    }

    /** {@link #encode} through Arrow's vectors: every parameter type the server fills. */
    byte[] encodeWithVectors(List<Object[]> rows) {
        try (BufferAllocator allocator = ROOT.newChildAllocator("evaluation-encode", 0, Long.MAX_VALUE);
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            for (FieldVector v : root.getFieldVectors()) {
                v.setInitialCapacity(Math.max(1, rows.size()));
            }
            root.allocateNew();
            for (int r = 0; r < rows.size(); r++) {
                for (int c = 0; c < schema.getFields().size(); c++) {
                    write(root.getVector(c), r, rows.get(r)[c]);
                }
            }
            root.setRowCount(rows.size());
            return ArrowIpc.write(root);
        }
    }

    /**
     * The values of the first column of an answer, every batch in order, as plain Java: strings, numbers, booleans,
     * maps (structs) and lists.
     *
     * <p>The answer comes from deployed code, so nothing it says is taken on trust before the heap is spent: an answer
     * of another number of rows than {@code rows} is refused before any row is read, and one holding more than
     * {@link #MAX_VALUES} values in all (list elements and struct fields counted) while it is read. Before, a few
     * bytes saying 2^31 rows (of a null type, or whose offsets' size overflowed) had the server build lists of
     * billions of entries.
     *
     * @param rows the rows asked for
     * @throws IllegalArgumentException when the bytes are not an Arrow IPC stream, or not an answer for {@code rows}
     */
    static List<@Nullable Object> decode(byte[] payload, int rows) {
        List<@Nullable Object> flat = decodeFlat(payload, rows);
        return flat != null ? flat : decodeWithVectors(payload, rows);
    }

    /** The most values an answer is read into: list elements, struct fields and cells. */
    static final int MAX_VALUES = 1 << 20;

    private static IllegalArgumentException rowsRefused(long answered, int rows) {
        return new IllegalArgumentException("it answered " + answered + " rows for " + rows + " arguments");
    }

    private static IllegalArgumentException valuesRefused() {
        return new IllegalArgumentException("its answer holds more than " + MAX_VALUES
                + " values (list elements and struct fields counted); answer with fewer");
    }

    /**
     * {@link #decode} of an answer of one batch whose first column is a plain scalar or a struct of them (a scorer's
     * {@code {score, metadata}}), read in place ({@link FlatIpc}) as {@link #decodeWithVectors} reads it: a struct as
     * a map of its children in their order; {@code null} for anything else.
     */
    private static @Nullable List<@Nullable Object> decodeFlat(byte[] payload, int rows) {
        FlatIpc.Batch batch = FlatIpc.read(payload);
        if (batch == null || batch.schema().getFields().isEmpty()) {
            return null;
        }
        if (batch.rows() != rows) {
            throw rowsRefused(batch.rows(), rows);
        }
        if ((long) rows * (1 + batch.schema().getFields().get(0).getChildren().size()) > MAX_VALUES) {
            throw valuesRefused();
        }
        Field field = batch.schema().getFields().get(0);
        List<@Nullable Object> out = new ArrayList<>(batch.rows());
        if (field.getType() instanceof ArrowType.Struct) {
            FlatIpc.Batch children = batch.struct(0);
            List<Field> fields = children.schema().getFields();
            String[] names = new String[fields.size()];
            List<List<@Nullable Object>> columns = new ArrayList<>(names.length);
            for (int c = 0; c < names.length; c++) {
                names[c] = fields.get(c).getName();
                List<@Nullable Object> column = scalars(children, c);
                if (column == null) {
                    return null;
                }
                columns.add(column);
            }
            for (int r = 0; r < batch.rows(); r++) {
                if (batch.isNull(0, r)) {
                    out.add(null);
                    continue;
                }
                Map<String, @Nullable Object> struct = new LinkedHashMap<>(2 * names.length);
                for (int c = 0; c < names.length; c++) {
                    struct.put(names[c], columns.get(c).get(r));
                }
                out.add(struct);
            }
            return out;
        }
        return scalars(batch, 0);
    }

    /** A flat column's values, as Arrow's vectors' {@code getObject} reads them; {@code null} for another type. */
    private static @Nullable List<@Nullable Object> scalars(FlatIpc.Batch batch, int column) {
        ArrowType type = batch.schema().getFields().get(column).getType();
        byte[] bytes = batch.bytes();
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int start = batch.valuesStart(column);
        List<@Nullable Object> out = new ArrayList<>(batch.rows());
        for (int r = 0; r < batch.rows(); r++) {
            if (batch.isNull(column, r)) {
                out.add(null);
                continue;
            }
            Object value;
            if (type instanceof ArrowType.Int i && i.getIsSigned()) {
                value = switch (i.getBitWidth()) {
                    case 8 -> bytes[start + r];
                    case 16 -> in.getShort(start + 2 * r);
                    case 32 -> in.getInt(start + 4 * r);
                    default -> in.getLong(start + 8 * r);
                };
            } else if (type instanceof ArrowType.FloatingPoint f
                    && f.getPrecision() != org.apache.arrow.vector.types.FloatingPointPrecision.HALF) {
                value = f.getPrecision() == org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE
                        ? (Object) in.getFloat(start + 4 * r)
                        : (Object) in.getDouble(start + 8 * r);
            } else if (type instanceof ArrowType.Bool) {
                value = (bytes[start + (r >>> 3)] & (1 << (r & 7))) != 0;
            } else if (type instanceof ArrowType.Utf8 || type instanceof ArrowType.Binary) {
                int offsets = batch.offsetsStart(column);
                int from = in.getInt(offsets + 4 * r);
                int to = in.getInt(offsets + 4 * (r + 1));
                if (from < 0 || to < from || to > batch.valuesLength(column)) {
                    return null; // the vectors' way reports it
                }
                value = type instanceof ArrowType.Utf8
                        ? new String(bytes, start + from, to - from, StandardCharsets.UTF_8)
                        : java.util.Arrays.copyOfRange(bytes, start + from, start + to);
            } else {
                return null;
            }
            out.add(value);
        }
        return out;
    }

    /** {@link #decode} through Arrow's vectors: every type and layout. */
    static List<@Nullable Object> decodeWithVectors(byte[] payload, int rows) {
        List<@Nullable Object> out = new ArrayList<>();
        int[] values = {0}; // read so far, against MAX_VALUES
        try (BufferAllocator allocator = ROOT.newChildAllocator("evaluation-decode", 0, Long.MAX_VALUE)) {
            ArrowIpc.read(payload, allocator, root -> {
                if (root.getFieldVectors().isEmpty()) {
                    throw new IllegalArgumentException("the answer has no column");
                }
                if ((long) out.size() + root.getRowCount() > rows) {
                    throw rowsRefused((long) out.size() + root.getRowCount(), rows);
                }
                FieldVector v = root.getVector(0);
                for (int i = 0; i < root.getRowCount(); i++) {
                    out.add(value(v, i, values));
                }
            });
        }
        if (out.size() != rows) {
            throw rowsRefused(out.size(), rows);
        }
        return out;
    }

    /**
     * A cell as plain Java. Structs and lists are read child by child: their {@code getObject} builds Arrow's
     * {@code JsonStringHashMap}, which needs jackson-datatype-jsr310 for nothing the server uses.
     */
    private static @Nullable Object value(ValueVector v, int index, int[] values) {
        if (++values[0] > MAX_VALUES) {
            throw valuesRefused();
        }
        if (v.isNull(index)) {
            return null;
        }
        if (v instanceof StructVector s) {
            Map<String, @Nullable Object> out = new LinkedHashMap<>();
            for (String name : s.getChildFieldNames()) {
                out.put(name, value(s.getChild(name), index, values));
            }
            return out;
        }
        if (v instanceof ListVector l) {
            List<@Nullable Object> out = new ArrayList<>();
            for (int k = l.getElementStartIndex(index); k < l.getElementEndIndex(index); k++) {
                out.add(value(l.getDataVector(), k, values));
            }
            return out;
        }
        if (v instanceof org.apache.arrow.vector.complex.FixedSizeListVector l) {
            List<@Nullable Object> out = new ArrayList<>();
            long from = (long) index * l.getListSize();
            for (long k = from; k < from + l.getListSize(); k++) {
                out.add(value(l.getDataVector(), Math.toIntExact(k), values));
            }
            return out;
        }
        if (v instanceof org.apache.arrow.vector.complex.LargeListVector l) {
            List<@Nullable Object> out = new ArrayList<>();
            for (long k = l.getElementStartIndex(index); k < l.getElementEndIndex(index); k++) {
                out.add(value(l.getDataVector(), Math.toIntExact(k), values));
            }
            return out;
        }
        if (v.getField().getType().isComplex()) {
            // a union's or another nested vector's own getObject builds its values uncounted
            throw new IllegalArgumentException(
                    "an answer of type " + v.getField().getType() + " is not read; answer with structs and lists");
        }
        Object o = v.getObject(index);
        if (o instanceof Text t) {
            return t.toString();
        }
        if (o instanceof LocalDateTime t) {
            return t.toString();
        }
        return o;
    }

    /** The value as the Java form {@link #write} expects for {@code type}. */
    private static Object convert(Object value, ArrowType type) {
        return switch (type.getTypeID()) {
            case Utf8, LargeUtf8 -> text(value);
            case Int -> integer(value);
            case FloatingPoint -> floating(value);
            case Bool -> bool(value);
            case Binary, LargeBinary ->
                value instanceof byte[] b ? b : text(value).getBytes(StandardCharsets.UTF_8);
            case Date -> {
                if (value instanceof LocalDate d) {
                    yield d;
                }
                if (value instanceof java.sql.Date d) {
                    yield d.toLocalDate();
                }
                try {
                    yield LocalDate.parse(text(value).strip());
                } catch (java.time.format.DateTimeParseException e) {
                    throw new IllegalArgumentException("'" + value + "' is not a date (yyyy-mm-dd)");
                }
            }
            default ->
                throw new IllegalArgumentException("the server cannot fill a parameter of this type from a dataset"
                        + " column; use a string, number, boolean, binary or date parameter");
        };
    }

    private static String text(Object value) {
        if (value instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
        if (value instanceof BigDecimal d) {
            return d.toPlainString();
        }
        return value.toString();
    }

    private static long integer(Object value) {
        if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
            return ((Number) value).longValue();
        }
        if (value instanceof Number n) {
            double d = n.doubleValue();
            if (d != Math.rint(d)) {
                throw new IllegalArgumentException(value + " is not a whole number");
            }
            return (long) d;
        }
        if (value instanceof Boolean b) {
            return b ? 1 : 0;
        }
        try {
            return Long.parseLong(text(value).strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + value + "' is not a whole number");
        }
    }

    private static double floating(Object value) {
        if (value instanceof Number n) {
            return n.doubleValue();
        }
        try {
            return Double.parseDouble(text(value).strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + value + "' is not a number");
        }
    }

    private static boolean bool(Object value) {
        if (value instanceof Boolean b) {
            return b;
        }
        if (value instanceof Number n) {
            return n.doubleValue() != 0;
        }
        String s = text(value).strip().toLowerCase(java.util.Locale.ROOT);
        return switch (s) {
            case "true", "t", "yes", "1" -> true;
            case "false", "f", "no", "0" -> false;
            default -> throw new IllegalArgumentException("'" + value + "' is not a boolean");
        };
    }

    private static void write(FieldVector v, int row, @Nullable Object value) {
        if (value == null) {
            if (v instanceof org.apache.arrow.vector.BaseFixedWidthVector f) {
                f.setNull(row);
            } else if (v instanceof org.apache.arrow.vector.BaseVariableWidthVector w) {
                w.setNull(row);
            } else if (v instanceof org.apache.arrow.vector.BaseLargeVariableWidthVector w) {
                w.setNull(row);
            }
            return;
        }
        if (v instanceof VarCharVector s) {
            s.setSafe(row, ((String) value).getBytes(StandardCharsets.UTF_8));
        } else if (v instanceof LargeVarCharVector s) {
            s.setSafe(row, ((String) value).getBytes(StandardCharsets.UTF_8));
        } else if (v instanceof VarBinaryVector b) {
            b.setSafe(row, (byte[]) value);
        } else if (v instanceof LargeVarBinaryVector b) {
            b.setSafe(row, (byte[]) value);
        } else if (v instanceof BigIntVector i) {
            i.setSafe(row, (Long) value);
        } else if (v instanceof IntVector i) {
            i.setSafe(row, Math.toIntExact((Long) value));
        } else if (v instanceof SmallIntVector i) {
            i.setSafe(row, (short) Math.toIntExact((Long) value));
        } else if (v instanceof TinyIntVector i) {
            i.setSafe(row, (byte) Math.toIntExact((Long) value));
        } else if (v instanceof Float8Vector f) {
            f.setSafe(row, (Double) value);
        } else if (v instanceof Float4Vector f) {
            f.setSafe(row, ((Double) value).floatValue());
        } else if (v instanceof BitVector b) {
            b.setSafe(row, ((Boolean) value) ? 1 : 0);
        } else if (v instanceof DateDayVector d) {
            d.setSafe(row, Math.toIntExact(((LocalDate) value).toEpochDay()));
        } else {
            throw new IllegalStateException("no writer for " + v.getField().getType() + " (convert() let it through)");
        }
    }

    /** A catalog field as an Arrow field: the scalar types {@link #convert} fills, others kept for their names. */
    private static Field field(ai.chalk.compute.proto.arrow.v1.Field f) {
        var t = f.getArrowType();
        ArrowType type = switch (t.getArrowTypeEnumCase()) {
            case BOOL -> ArrowType.Bool.INSTANCE;
            case INT8 -> new ArrowType.Int(8, true);
            case INT16 -> new ArrowType.Int(16, true);
            case INT32 -> new ArrowType.Int(32, true);
            case INT64 -> new ArrowType.Int(64, true);
            case FLOAT32 -> new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case FLOAT64 -> new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            case UTF8 -> ArrowType.Utf8.INSTANCE;
            case LARGE_UTF8 -> ArrowType.LargeUtf8.INSTANCE;
            case BINARY -> ArrowType.Binary.INSTANCE;
            case LARGE_BINARY -> ArrowType.LargeBinary.INSTANCE;
            case DATE32 -> new ArrowType.Date(DateUnit.DAY);
            default -> null;
        };
        if (type == null) {
            throw new IllegalArgumentException("parameter '" + f.getName() + "' has Arrow type "
                    + t.getArrowTypeEnumCase() + ", which the server cannot fill from a dataset column; use a string,"
                    + " number, boolean, binary or date parameter");
        }
        return new Field(f.getName(), new FieldType(f.getNullable(), type, null, f.getMetadataMap()), List.of());
    }
}
