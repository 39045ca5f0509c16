package ai.chalk.compute.function.arrow;

import ai.chalk.compute.proto.arrow.ArrowIpc;
import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Encodes rows of Java values into an Arrow IPC stream with a given schema, and decodes such payloads
 * back into rows. Each column has a declared Java type; see {@link ArrowTypeMapping} for how types map.
 * <pre>{@code
 * RowCodec codec = RowCodec.of(schema, List.of(String.class, int.class), ArrowTypeMapping.standard());
 * byte[] payload = codec.encode(List.of(new Object[] {"a", 1}, new Object[] {"b", 2}));
 * List<Object[]> rows = codec.decode(payload, DecodeContext.empty());
 * }</pre>
 *
 * <p>Decoding matches columns by name and ignores columns it does not know, so a dataset with more
 * columns than a function's parameters decodes fine. A column the payload lacks takes the JSON default
 * in its field's {@link ChalkMetadata#DEFAULT} metadata; without one it is an error. When the codec and
 * the payload both have a single column, that column is used whatever its name (results are named
 * differently by different runtimes). Immutable and thread-safe.
 */
public final class RowCodec {

    /**
     * The root of every encode's and decode's allocator. A root allocator per payload cost each call its setup; a
     * child per payload still checks on close that the payload's buffers were all released.
     */
    private static final BufferAllocator ROOT = new RootAllocator();

    private final Schema schema;
    private final List<ValueType> types;
    private final List<JsonNode> defaults;
    /** The schema's IPC message, which starts every payload this codec writes: serialised once, not per payload. */
    private final byte[] schemaMessage;
    /** The way without Arrow's vectors for a schema of plain scalars; {@code null} for other schemas. */
    private final FlatRows flat;

    private RowCodec(Schema schema, List<ValueType> types, List<JsonNode> defaults) {
        this.schema = schema;
        this.types = types;
        this.defaults = defaults;
        this.schemaMessage = ArrowIpc.schemaMessage(schema);
        this.flat = FlatRows.of(schema, types);
    }

    /**
     * A codec for a schema whose columns hold values of the given Java types.
     *
     * @param schema    the schema payloads are written with
     * @param javaTypes the declared Java type of each column, in the schema's order
     * @param mapping   the mapping that knows the custom types among them
     * @return the codec
     * @throws UnsupportedJavaTypeException when a type has no mapping
     * @throws IllegalArgumentException     when the counts differ or a column's default is not a value of its type
     */
    public static RowCodec of(Schema schema, List<? extends Type> javaTypes, ArrowTypeMapping mapping) {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(mapping, "mapping");
        List<Field> fields = schema.getFields();
        if (fields.size() != javaTypes.size()) {
            throw new IllegalArgumentException(
                    "the schema has " + fields.size() + " columns but " + javaTypes.size() + " Java types were given");
        }
        List<ValueType> types = new ArrayList<>();
        List<JsonNode> defaults = new ArrayList<>();
        for (int i = 0; i < fields.size(); i++) {
            ValueType type = mapping.resolve(javaTypes.get(i));
            types.add(type);
            String json = fields.get(i).getMetadata().get(ChalkMetadata.DEFAULT);
            JsonNode node = null;
            if (json != null) {
                node = ArrowTypeMapping.parse(json);
                try {
                    JsonValues.fromJson(node, type, "");
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(
                            "the default of column '" + fields.get(i).getName() + "' is " + json + ": "
                                    + e.getMessage(),
                            e);
                }
            }
            defaults.add(node);
        }
        return new RowCodec(schema, List.copyOf(types), java.util.Collections.unmodifiableList(defaults));
    }

    /** The schema payloads are written with. */
    public Schema schema() {
        return schema;
    }

    /**
     * How many leading columns a row must give: those up to the last column without a default. A row may leave out
     * the columns after them, which then take their defaults ({@link #withDefaults(Object[])}).
     *
     * @return the number of columns a row cannot leave out
     */
    public int requiredColumns() {
        int required = defaults.size();
        while (required > 0 && defaults.get(required - 1) != null) {
            required--;
        }
        return required;
    }

    /**
     * The default of a column as JSON, as its field's {@link ChalkMetadata#DEFAULT} metadata holds it.
     *
     * @param column the column's index
     * @return the default, if the column has one
     */
    public java.util.Optional<String> defaultJson(int column) {
        JsonNode node = defaults.get(column);
        return node == null ? java.util.Optional.empty() : java.util.Optional.of(node.toString());
    }

    /**
     * A row that leaves out trailing columns, completed with their defaults (a fresh value for each row, so a
     * default list is never shared between calls).
     *
     * @param values the values given, in column order; at least {@link #requiredColumns()} of them
     * @return a row with one value per column; {@code values} itself when it has them all
     * @throws IllegalArgumentException when it gives fewer than {@link #requiredColumns()} values, or too many
     */
    public Object[] withDefaults(Object[] values) {
        int columns = defaults.size();
        if (values.length == columns) {
            return values;
        }
        if (values.length < requiredColumns() || values.length > columns) {
            throw new IllegalArgumentException(
                    values.length + " values for " + requiredColumns() + " to " + columns + " columns");
        }
        Object[] complete = java.util.Arrays.copyOf(values, columns);
        for (int column = values.length; column < columns; column++) {
            complete[column] = JsonValues.fromJson(defaults.get(column), types.get(column), "");
        }
        return complete;
    }

    /**
     * Encodes rows as one Arrow IPC stream holding one record batch.
     *
     * @param rows the rows, each with one value per column in the schema's order
     * @return the IPC stream
     * @throws ArrowPayloadException when a value does not fit its column, naming the row and the column
     */
    public byte[] encode(List<Object[]> rows) {
        if (flat != null) {
            byte[] written = flat.encode(schemaMessage, rows);
            if (written != null) {
                return written;
            }
        }
        return encodeWithVectors(rows);
    }

    /** {@link #encode} through Arrow's vectors: every type, and the messages that name a value that does not fit. */
    byte[] encodeWithVectors(List<Object[]> rows) {
        List<Field> fields = schema.getFields();
        try (BufferAllocator allocator = ROOT.newChildAllocator("encode", 0, Long.MAX_VALUE);
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            for (FieldVector vector : root.getFieldVectors()) {
                vector.setInitialCapacity(Math.max(1, rows.size())); // not Arrow's default of thousands of rows
            }
            root.allocateNew();
            for (int row = 0; row < rows.size(); row++) {
                Object[] values = rows.get(row);
                if (values == null || values.length != fields.size()) {
                    throw new ArrowPayloadException("row " + row + " has " + (values == null ? "no" : values.length)
                            + " values but the schema has " + fields.size() + " columns");
                }
                for (int column = 0; column < values.length; column++) {
                    VectorWriter.write(
                            root.getVector(column),
                            row,
                            values[column],
                            types.get(column),
                            Location.cell(row, fields.get(column).getName()));
                }
            }
            root.setRowCount(rows.size());
            return ArrowIpc.write(schemaMessage, root);
        }
    }

    /**
     * Decodes every row of an Arrow IPC stream (or file), all batches in order.
     *
     * @param payload the IPC bytes
     * @param context services for rebuilding custom values, such as a {@code SandboxClient} for sandbox handles
     * @return one array per row, with one value per column of this codec's schema, in its order
     * @throws ArrowPayloadException when the bytes are not Arrow, a column is missing, or a value does not
     *                               read as its Java type
     */
    public List<Object[]> decode(byte[] payload, DecodeContext context) {
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(context, "context");
        if (flat != null) {
            List<Object[]> read = flat.decode(payload);
            if (read != null) {
                return read;
            }
        }
        return decodeWithVectors(payload, context);
    }

    /** {@link #decode} through Arrow's vectors: every type and layout, and the messages for what does not read. */
    List<Object[]> decodeWithVectors(byte[] payload, DecodeContext context) {
        List<Object[]> rows = new ArrayList<>();
        try (BufferAllocator allocator = ROOT.newChildAllocator("decode", 0, Long.MAX_VALUE)) {
            ArrowIpc.read(payload, allocator, root -> {
                requirePlausibleRows(root.getRowCount(), payload.length);
                readBatch(root, context, rows);
            });
        } catch (ArrowPayloadException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            throw new ArrowPayloadException(e.getMessage(), e);
        }
        return rows;
    }

    /** The most rows a payload may claim when no column's bytes bound them (no columns, or only null-typed ones). */
    static final int MAX_ROWS_WITHOUT_DATA = 1 << 20;

    /**
     * Refuses a row count that the payload's bytes cannot hold: every column type but null takes at least a bit per
     * row, so a larger count comes from a payload without data columns, and believing it would allocate one array
     * per claimed row (2^31 rows for a few hundred bytes).
     */
    static void requirePlausibleRows(long rows, int payloadBytes) {
        if (rows > MAX_ROWS_WITHOUT_DATA && rows > 8L * payloadBytes) {
            throw new ArrowPayloadException("the payload claims " + rows + " rows in " + payloadBytes
                    + " bytes; without data columns at most " + MAX_ROWS_WITHOUT_DATA
                    + " rows can be sent in one payload: split the call into smaller batches");
        }
    }

    private void readBatch(VectorSchemaRoot root, DecodeContext context, List<Object[]> rows) {
        List<Field> fields = schema.getFields();
        FieldVector[] vectors = new FieldVector[fields.size()];
        for (int column = 0; column < vectors.length; column++) {
            vectors[column] = column(root, column);
        }
        int first = rows.size();
        for (int row = 0; row < root.getRowCount(); row++) {
            Object[] values = new Object[vectors.length];
            for (int column = 0; column < vectors.length; column++) {
                String name = fields.get(column).getName();
                values[column] = vectors[column] == null
                        ? JsonValues.fromJson(defaults.get(column), types.get(column), "")
                        : VectorReader.read(
                                vectors[column], row, types.get(column), context, Location.cell(first + row, name));
            }
            rows.add(values);
        }
    }

    private FieldVector column(VectorSchemaRoot root, int column) {
        String name = schema.getFields().get(column).getName();
        FieldVector vector = root.getVector(name);
        if (vector != null) {
            return vector;
        }
        if (schema.getFields().size() == 1 && root.getFieldVectors().size() == 1) {
            return root.getVector(0);
        }
        if (defaults.get(column) != null) {
            return null;
        }
        List<String> present =
                root.getSchema().getFields().stream().map(Field::getName).toList();
        throw new ArrowPayloadException(
                "the payload has no column '" + name + "' and it has no default; the payload's columns are " + present);
    }
}
