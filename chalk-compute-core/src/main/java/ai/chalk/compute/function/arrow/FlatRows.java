package ai.chalk.compute.function.arrow;

import ai.chalk.compute.proto.arrow.FlatIpc;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * {@link RowCodec}'s way for schemas of plain scalars (booleans, integers, floating point, strings, bytes): rows
 * written to and read from the IPC bytes directly ({@link FlatIpc}), without Arrow's vectors and allocators, which
 * cost a small call more than its values. It writes the bytes Arrow's vectors would; whatever it does not handle
 * exactly as {@link VectorWriter} and {@link VectorReader} do (a value of another class, a null where none may be,
 * a payload of other types or several batches) it declines with {@code null}, and the codec takes the general way,
 * which converts or reports it.
 */
final class FlatRows {

    private static final VarHandle SHORT = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private final List<Field> fields;
    private final ValueType.Scalar[] types;

    private FlatRows(List<Field> fields, ValueType.Scalar[] types) {
        this.fields = fields;
        this.types = types;
    }

    /** The flat way for a schema, or {@code null} when a column is not a plain scalar written as its kind's type. */
    static FlatRows of(Schema schema, List<ValueType> types) {
        List<Field> fields = schema.getFields();
        ValueType.Scalar[] scalars = new ValueType.Scalar[types.size()];
        for (int i = 0; i < scalars.length; i++) {
            if (!(types.get(i) instanceof ValueType.Scalar s)
                    || !handled(s.kind())
                    || FlatIpc.Layout.of(fields.get(i)) == null
                    || !fields.get(i).getType().equals(s.kind().arrowType())) {
                return null;
            }
            scalars[i] = s;
        }
        return new FlatRows(fields, scalars);
    }

    private static boolean handled(ScalarKind kind) {
        return switch (kind) {
            case BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, STRING, BYTES -> true;
            default -> false;
        };
    }

    /** The IPC stream of the rows, or {@code null} when a value is not exactly its column's class (or a wrong null). */
    byte[] encode(byte[] schemaMessage, List<Object[]> rows) {
        int n = rows.size();
        if (n == 0) {
            return null;
        }
        List<FlatIpc.Column> columns = new ArrayList<>(types.length);
        for (int column = 0; column < types.length; column++) {
            FlatIpc.Column c = encodeColumn(rows, column, n);
            if (c == null) {
                return null;
            }
            columns.add(c);
        }
        return FlatIpc.write(schemaMessage, n, columns);
    }

    private FlatIpc.Column encodeColumn(List<Object[]> rows, int column, int n) {
        ValueType.Scalar type = types[column];
        Class<?> expected = type.kind().boxedType();
        byte[] validity = new byte[(n + 7) / 8];
        int nulls = 0;
        Object[] values = new Object[n];
        for (int row = 0; row < n; row++) {
            Object[] r = rows.get(row);
            if (r == null || r.length != types.length) {
                return null;
            }
            Object v = r[column];
            if (v == null) {
                if (type.primitive()) {
                    return null;
                }
                nulls++;
            } else if (v.getClass() != expected) {
                return null;
            } else {
                validity[row >>> 3] |= (byte) (1 << (row & 7));
            }
            values[row] = v;
        }
        return switch (type.kind()) {
            case BOOLEAN -> {
                byte[] bits = new byte[(n + 7) / 8];
                for (int row = 0; row < n; row++) {
                    if (values[row] != null && (Boolean) values[row]) {
                        bits[row >>> 3] |= (byte) (1 << (row & 7));
                    }
                }
                yield new FlatIpc.Column(nulls, validity, null, bits, bits.length);
            }
            case BYTE -> {
                byte[] out = new byte[n];
                for (int row = 0; row < n; row++) {
                    out[row] = values[row] == null ? 0 : (Byte) values[row];
                }
                yield new FlatIpc.Column(nulls, validity, null, out, out.length);
            }
            case SHORT -> {
                byte[] out = new byte[2 * n];
                for (int row = 0; row < n; row++) {
                    SHORT.set(out, 2 * row, values[row] == null ? (short) 0 : (Short) values[row]);
                }
                yield new FlatIpc.Column(nulls, validity, null, out, out.length);
            }
            case INT -> {
                byte[] out = new byte[4 * n];
                for (int row = 0; row < n; row++) {
                    INT.set(out, 4 * row, values[row] == null ? 0 : (Integer) values[row]);
                }
                yield new FlatIpc.Column(nulls, validity, null, out, out.length);
            }
            case LONG -> {
                byte[] out = new byte[8 * n];
                for (int row = 0; row < n; row++) {
                    LONG.set(out, 8 * row, values[row] == null ? 0L : (Long) values[row]);
                }
                yield new FlatIpc.Column(nulls, validity, null, out, out.length);
            }
            case FLOAT -> {
                byte[] out = new byte[4 * n];
                for (int row = 0; row < n; row++) {
                    INT.set(out, 4 * row, values[row] == null ? 0 : Float.floatToRawIntBits((Float) values[row]));
                }
                yield new FlatIpc.Column(nulls, validity, null, out, out.length);
            }
            case DOUBLE -> {
                byte[] out = new byte[8 * n];
                for (int row = 0; row < n; row++) {
                    LONG.set(out, 8 * row, values[row] == null ? 0L : Double.doubleToRawLongBits((Double) values[row]));
                }
                yield new FlatIpc.Column(nulls, validity, null, out, out.length);
            }
            case STRING, BYTES -> {
                byte[][] each = new byte[n][];
                long total = 0;
                for (int row = 0; row < n; row++) {
                    if (values[row] != null) {
                        each[row] = values[row] instanceof String s
                                ? s.getBytes(StandardCharsets.UTF_8)
                                : (byte[]) values[row];
                        total += each[row].length;
                    }
                }
                if (total > Integer.MAX_VALUE - 16) {
                    yield null; // past 32-bit offsets: the general way says so
                }
                byte[] offsets = new byte[4 * (n + 1)];
                byte[] data = new byte[(int) total];
                int at = 0;
                for (int row = 0; row < n; row++) {
                    if (each[row] != null) {
                        System.arraycopy(each[row], 0, data, at, each[row].length);
                        at += each[row].length;
                    }
                    INT.set(offsets, 4 * (row + 1), at);
                }
                yield new FlatIpc.Column(nulls, validity, offsets, data, data.length);
            }
            default -> null;
        };
    }

    /**
     * The rows of a payload of one batch of flat columns, or {@code null} when it is anything else, lacks one of the
     * columns, has one of another type, or holds a null where none may be.
     */
    List<Object[]> decode(byte[] payload) {
        FlatIpc.Batch batch = FlatIpc.read(payload);
        if (batch == null) {
            return null;
        }
        List<Field> present = batch.schema().getFields();
        int[] index = new int[types.length];
        for (int column = 0; column < types.length; column++) {
            int at = indexOf(present, fields.get(column).getName());
            if (at < 0 && types.length == 1 && present.size() == 1) {
                at = 0; // a single result column, whatever its name (as RowCodec decodes it)
            }
            if (at < 0 || !present.get(at).getType().equals(types[column].kind().arrowType())) {
                return null;
            }
            index[column] = at;
        }
        int n = batch.rows();
        RowCodec.requirePlausibleRows(n, payload.length);
        Object[][] rows = new Object[n][types.length];
        for (int column = 0; column < types.length; column++) {
            if (!decodeColumn(batch, index[column], types[column], rows, column)) {
                return null;
            }
        }
        return new ArrayList<>(Arrays.asList(rows));
    }

    private static int indexOf(List<Field> fields, String name) {
        for (int i = 0; i < fields.size(); i++) {
            if (fields.get(i).getName().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private static boolean decodeColumn(
            FlatIpc.Batch batch, int at, ValueType.Scalar type, Object[][] rows, int column) {
        byte[] bytes = batch.bytes();
        int start = batch.valuesStart(at);
        int n = batch.rows();
        for (int row = 0; row < n; row++) {
            if (batch.isNull(at, row)) {
                if (type.primitive()) {
                    return false;
                }
                continue;
            }
            Object value = switch (type.kind()) {
                case BOOLEAN -> (bytes[start + (row >>> 3)] & (1 << (row & 7))) != 0;
                case BYTE -> bytes[start + row];
                case SHORT -> (short) SHORT.get(bytes, start + 2 * row);
                case INT -> (int) INT.get(bytes, start + 4 * row);
                case LONG -> (long) LONG.get(bytes, start + 8 * row);
                case FLOAT -> Float.intBitsToFloat((int) INT.get(bytes, start + 4 * row));
                case DOUBLE -> Double.longBitsToDouble((long) LONG.get(bytes, start + 8 * row));
                case STRING, BYTES -> {
                    int offsets = batch.offsetsStart(at);
                    int from = (int) INT.get(bytes, offsets + 4 * row);
                    int to = (int) INT.get(bytes, offsets + 4 * (row + 1));
                    if (from < 0 || to < from || to > batch.valuesLength(at)) {
                        yield null;
                    }
                    yield type.kind() == ScalarKind.STRING
                            ? new String(bytes, start + from, to - from, StandardCharsets.UTF_8)
                            : Arrays.copyOfRange(bytes, start + from, start + to);
                }
                default -> null;
            };
            if (value == null) {
                return false; // offsets out of range: the general way reports the payload as malformed
            }
            rows[row][column] = value;
        }
        return true;
    }
}
