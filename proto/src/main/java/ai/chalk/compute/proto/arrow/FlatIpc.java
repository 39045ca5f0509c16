package ai.chalk.compute.proto.arrow;

import com.google.flatbuffers.FlatBufferBuilder;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.MetadataVersion;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Arrow IPC streams of one record batch whose columns are all flat (booleans, integers, floating point, UTF-8 and
 * binary; no children, no dictionaries, no compression), written from and read into plain byte arrays. A small
 * function call's payload is such a stream, and Arrow's vectors, allocators and channels cost it more than its
 * values: this writes the bytes {@link ArrowIpc#write(byte[], org.apache.arrow.vector.VectorSchemaRoot)} writes for the
 * same batch (the same metadata, buffers and padding), and reads such a stream in place. It also reads (never writes)
 * a column that is a struct of flat columns, such as a scorer's {@code {score, metadata}} answer, whose reading through
 * the vectors cost an evaluation run more than its values did. Anything else it declines ({@code null}), and the
 * caller takes {@link ArrowIpc}'s general path.
 */
public final class FlatIpc {

    private static final int CONTINUATION = 0xFFFFFFFF;

    private FlatIpc() {}

    /** How a flat field's values are laid out, after its validity bitmap. */
    public enum Layout {
        /** One bit per value ({@code bool}). */
        BITS,
        /** A fixed number of bytes per value (integers, floating point). */
        FIXED,
        /** 32-bit offsets, then the bytes of all values ({@code utf8}, {@code binary}). */
        VARIABLE;

        /** The layout of a field's type, or {@code null} when it is not a flat type this class reads and writes. */
        public static Layout of(Field field) {
            if (!field.getChildren().isEmpty() || field.getDictionary() != null) {
                return null;
            }
            ArrowType type = field.getType();
            if (type instanceof ArrowType.Bool) {
                return BITS;
            }
            if (type instanceof ArrowType.Int || type instanceof ArrowType.FloatingPoint) {
                return FIXED;
            }
            if (type instanceof ArrowType.Utf8 || type instanceof ArrowType.Binary) {
                return VARIABLE;
            }
            return null;
        }

        int buffers() {
            return this == VARIABLE ? 3 : 2;
        }
    }

    /**
     * One column's buffers, as Arrow lays them out.
     *
     * @param nullCount     how many of its values are null
     * @param validity      the validity bitmap, one bit per row (set: a value), at least {@code ceil(rows / 8)} bytes
     * @param offsets       for {@link Layout#VARIABLE}: {@code rows + 1} little-endian 32-bit offsets into
     *                      {@code values}; otherwise {@code null}
     * @param values        the values' bytes
     * @param valuesLength  how many bytes of {@code values} are the column's
     */
    public record Column(int nullCount, byte[] validity, byte[] offsets, byte[] values, int valuesLength) {}

    /**
     * The IPC stream of one batch of {@code rows} rows: {@code schemaMessage} (see {@link ArrowIpc#schemaMessage}),
     * the batch, the end-of-stream marker.
     *
     * @param columns one per field of the schema, in its order
     */
    public static byte[] write(byte[] schemaMessage, int rows, List<Column> columns) {
        int buffers = 0;
        for (Column c : columns) {
            buffers += c.offsets() == null ? 2 : 3;
        }
        long[] lengths = new long[buffers];
        int b = 0;
        int validityBytes = (rows + 7) / 8;
        for (Column c : columns) {
            lengths[b++] = validityBytes;
            if (c.offsets() != null) {
                lengths[b++] = (long) (rows + 1) * Integer.BYTES;
            }
            lengths[b++] = c.valuesLength();
        }
        long[] offsets = new long[buffers];
        long body = 0;
        for (int i = 0; i < buffers; i++) {
            offsets[i] = body;
            body = padded(body + lengths[i]);
        }
        // as Arrow's ArrowRecordBatch.writeTo and MessageSerializer.serializeMessage build it
        FlatBufferBuilder fb = new FlatBufferBuilder(128 + 16 * columns.size() + 16 * buffers);
        RecordBatch.startNodesVector(fb, columns.size());
        for (int i = columns.size() - 1; i >= 0; i--) { // struct vectors are written back to front
            org.apache.arrow.flatbuf.FieldNode.createFieldNode(
                    fb, rows, columns.get(i).nullCount());
        }
        int nodes = fb.endVector();
        RecordBatch.startBuffersVector(fb, buffers);
        for (int i = buffers - 1; i >= 0; i--) {
            org.apache.arrow.flatbuf.Buffer.createBuffer(fb, offsets[i], lengths[i]);
        }
        int bufferVector = fb.endVector();
        RecordBatch.startRecordBatch(fb);
        RecordBatch.addLength(fb, rows);
        RecordBatch.addNodes(fb, nodes);
        RecordBatch.addBuffers(fb, bufferVector);
        int batch = RecordBatch.endRecordBatch(fb);
        Message.startMessage(fb);
        Message.addHeaderType(fb, MessageHeader.RecordBatch);
        Message.addHeader(fb, batch);
        Message.addVersion(fb, MetadataVersion.V5);
        Message.addBodyLength(fb, body);
        fb.finish(Message.endMessage(fb));
        ByteBuffer metadata = fb.dataBuffer();
        int metadataLength = metadata.remaining();
        // the metadata is padded so that the body starts 8-byte aligned (the schema message is aligned already)
        int misaligned = (schemaMessage.length + metadataLength + 8) % 8;
        int paddedMetadata = metadataLength + (misaligned == 0 ? 0 : 8 - misaligned);
        long total = (long) schemaMessage.length + 8 + paddedMetadata + body + 8;
        if (total > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("a batch of " + total + " bytes is too large for one payload");
        }
        byte[] out = new byte[(int) total];
        ByteBuffer w = ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN);
        w.put(schemaMessage);
        w.putInt(CONTINUATION);
        w.putInt(paddedMetadata);
        w.put(metadata);
        int bodyStart = schemaMessage.length + 8 + paddedMetadata;
        b = 0;
        for (Column c : columns) {
            System.arraycopy(c.validity(), 0, out, bodyStart + (int) offsets[b], validityBytes);
            b++;
            if (c.offsets() != null) {
                System.arraycopy(c.offsets(), 0, out, bodyStart + (int) offsets[b], (int) lengths[b]);
                b++;
            }
            System.arraycopy(c.values(), 0, out, bodyStart + (int) offsets[b], c.valuesLength());
            b++;
        }
        w.position((int) (bodyStart + body));
        w.putInt(CONTINUATION); // end of stream
        w.putInt(0);
        return out;
    }

    private static long padded(long n) {
        return (n + 7) & ~7L;
    }

    /**
     * Reads an IPC stream that holds a schema and exactly one batch of flat columns and structs of flat columns, in
     * place.
     *
     * @return the batch, or {@code null} when the bytes are anything else (a file, dictionaries, compression, deeper
     *         nesting or other types, several batches, or malformed): {@link ArrowIpc#read} then reads them, or says
     *         what is wrong
     */
    public static Batch read(byte[] bytes) {
        try {
            return readOrNull(bytes);
        } catch (RuntimeException e) {
            return null; // malformed in a way the general path reports properly
        }
    }

    private static Batch readOrNull(byte[] bytes) {
        int schemaEnd = ArrowIpc.schemaMessageEnd(bytes, 0, bytes.length);
        if (schemaEnd < 0) {
            return null;
        }
        Schema schema;
        try {
            schema = ArrowIpc.schema(bytes, 0, schemaEnd);
        } catch (java.io.IOException e) {
            return null;
        }
        List<Field> fields = schema.getFields();
        // the batch's nodes and buffers come depth first: a struct's own (its validity), then its children's
        int expectedNodes = 0;
        int expectedBuffers = 0;
        for (Field f : fields) {
            if (isFlatStruct(f)) {
                expectedNodes += 1 + f.getChildren().size();
                expectedBuffers += 1;
                for (Field child : f.getChildren()) {
                    expectedBuffers += Layout.of(child).buffers();
                }
            } else if (Layout.of(f) != null) {
                expectedNodes++;
                expectedBuffers += Layout.of(f).buffers();
            } else {
                return null;
            }
        }
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        in.position(schemaEnd);
        if (in.remaining() < 8) {
            return null;
        }
        int length = in.getInt();
        if (length == CONTINUATION) {
            length = in.getInt();
        }
        if (length <= 0 || length > in.remaining()) {
            return null;
        }
        ByteBuffer metadata = in.slice().order(ByteOrder.LITTLE_ENDIAN);
        metadata.limit(length);
        Message message = Message.getRootAsMessage(metadata);
        if (message.headerType() != MessageHeader.RecordBatch) {
            return null;
        }
        RecordBatch batch = (RecordBatch) message.header(new RecordBatch());
        if (batch == null
                || batch.compression() != null
                || batch.variadicBufferCountsLength() != 0
                || batch.nodesLength() != expectedNodes
                || batch.buffersLength() != expectedBuffers
                || batch.length() < 0
                || batch.length() > Integer.MAX_VALUE) {
            return null;
        }
        int bodyStart = in.position() + length;
        long bodyLength = message.bodyLength();
        if (bodyLength < 0 || bodyLength > bytes.length - bodyStart) {
            return null;
        }
        int end = (int) (bodyStart + bodyLength);
        // nothing but the end of the stream may follow: a second batch goes the general way
        int rest = bytes.length - end;
        if (rest != 0) {
            ByteBuffer tail = ByteBuffer.wrap(bytes, end, rest).order(ByteOrder.LITTLE_ENDIAN);
            boolean eos = (rest == 8 && tail.getInt() == CONTINUATION && tail.getInt() == 0)
                    || (rest == 4 && tail.getInt() == 0);
            if (!eos) {
                return null;
            }
        }
        int rows = (int) batch.length();
        int[] starts = new int[expectedBuffers];
        int[] sizes = new int[expectedBuffers];
        org.apache.arrow.flatbuf.Buffer buffer = new org.apache.arrow.flatbuf.Buffer();
        for (int i = 0; i < expectedBuffers; i++) {
            batch.buffers(buffer, i);
            long offset = buffer.offset();
            long size = buffer.length();
            if (offset < 0 || size < 0 || offset + size > bodyLength) {
                return null;
            }
            starts[i] = (int) (bodyStart + offset);
            sizes[i] = (int) size;
        }
        int[] at = {0, 0}; // the next node, the next buffer
        return columns(schema, rows, bytes, batch, starts, sizes, at);
    }

    /** Whether a field is a struct whose children are all flat (no deeper nesting), which {@link #read} reads. */
    private static boolean isFlatStruct(Field field) {
        if (!(field.getType() instanceof ArrowType.Struct)
                || field.getDictionary() != null
                || field.getChildren().isEmpty()) {
            return false;
        }
        for (Field child : field.getChildren()) {
            if (Layout.of(child) == null) {
                return false;
            }
        }
        return true;
    }

    /**
     * The columns of {@code schema} (a batch's, or a struct's children) from the node and buffer {@code at} names on,
     * checked against the rows; {@code at} is advanced past them. {@code null} when a node or buffer does not fit.
     */
    private static Batch columns(
            Schema schema, int rows, byte[] bytes, RecordBatch batch, int[] starts, int[] sizes, int[] at) {
        List<Field> fields = schema.getFields();
        Layout[] layouts = new Layout[fields.size()];
        int[] nullCounts = new int[fields.size()];
        int[] first = new int[fields.size()];
        Batch[] children = new Batch[fields.size()];
        int validityBytes = (rows + 7) / 8;
        org.apache.arrow.flatbuf.FieldNode node = new org.apache.arrow.flatbuf.FieldNode();
        for (int i = 0; i < fields.size(); i++) {
            batch.nodes(node, at[0]++);
            if (node.length() != rows || node.nullCount() < 0 || node.nullCount() > rows) {
                return null;
            }
            nullCounts[i] = (int) node.nullCount();
            int b = at[1];
            first[i] = b;
            if (nullCounts[i] > 0 && sizes[b] < validityBytes) {
                return null;
            }
            Layout layout = Layout.of(fields.get(i));
            layouts[i] = layout;
            if (layout == null) { // a struct of flat children (read checked the schema)
                at[1]++;
                children[i] = columns(new Schema(fields.get(i).getChildren()), rows, bytes, batch, starts, sizes, at);
                if (children[i] == null) {
                    return null;
                }
                continue;
            }
            if (layout == Layout.VARIABLE && rows > 0 && sizes[b + 1] < (rows + 1L) * Integer.BYTES) {
                return null;
            }
            if (layout == Layout.BITS && sizes[b + 1] < validityBytes) {
                return null;
            }
            if (layout == Layout.FIXED
                    && (long) sizes[b + 1] < (long) rows * width(fields.get(i).getType())) {
                return null;
            }
            at[1] += layout.buffers();
        }
        return new Batch(schema, rows, bytes, layouts, nullCounts, starts, sizes, first, children);
    }

    /** Bytes per value of a fixed-width type. */
    public static int width(ArrowType type) {
        if (type instanceof ArrowType.Int i) {
            return i.getBitWidth() / 8;
        }
        if (type instanceof ArrowType.FloatingPoint f) {
            return switch (f.getPrecision()) {
                case HALF -> 2;
                case SINGLE -> 4;
                case DOUBLE -> 8;
            };
        }
        throw new IllegalArgumentException(type + " is not a fixed-width type");
    }

    /**
     * One batch read in place: its buffers are ranges of the payload's bytes. Columns are numbered as the schema's
     * fields; a struct column's children are a batch of their own ({@link #struct}).
     */
    public static final class Batch {
        private final Schema schema;
        private final int rows;
        private final byte[] bytes;
        /** Each column's layout; null for a struct. */
        private final Layout[] layouts;

        private final int[] nullCounts;
        /** Every buffer of the payload (shared with a struct's children): where it starts and its size. */
        private final int[] starts;

        private final int[] sizes;
        /** The index of each column's first buffer (its validity bitmap). */
        private final int[] first;
        /** A struct column's children; null for a flat column. */
        private final Batch[] children;

        private Batch(
                Schema schema,
                int rows,
                byte[] bytes,
                Layout[] layouts,
                int[] nullCounts,
                int[] starts,
                int[] sizes,
                int[] first,
                Batch[] children) {
            this.schema = schema;
            this.rows = rows;
            this.bytes = bytes;
            this.layouts = layouts;
            this.nullCounts = nullCounts;
            this.starts = starts;
            this.sizes = sizes;
            this.first = first;
            this.children = children;
        }

        /** The payload's schema (for a struct's children: theirs). */
        public Schema schema() {
            return schema;
        }

        /** Its rows. */
        public int rows() {
            return rows;
        }

        /** The payload, which the buffers are ranges of. */
        public byte[] bytes() {
            return bytes;
        }

        /** Whether a column's value in a row is null (for a struct: the struct itself, whatever its children hold). */
        public boolean isNull(int column, int row) {
            if (nullCounts[column] == 0) {
                return false;
            }
            int validity = starts[first[column]];
            return (bytes[validity + (row >>> 3)] & (1 << (row & 7))) == 0;
        }

        /**
         * The children of a struct column, as columns of a batch of the same rows.
         *
         * @throws IllegalArgumentException when the column is flat
         */
        public Batch struct(int column) {
            if (children[column] == null) {
                throw new IllegalArgumentException("column " + column + " is not a struct");
            }
            return children[column];
        }

        /** Where the values of a flat column start in {@link #bytes()} (its bits, fixed-width values, or bytes). */
        public int valuesStart(int column) {
            return starts[first[column] + (isVariable(column) ? 2 : 1)];
        }

        /** How many bytes a flat column's values take. */
        public int valuesLength(int column) {
            return sizes[first[column] + (isVariable(column) ? 2 : 1)];
        }

        /** Where a variable-width column's 32-bit offsets start in {@link #bytes()}. */
        public int offsetsStart(int column) {
            return starts[first[column] + 1];
        }

        private boolean isVariable(int column) {
            if (layouts[column] == null) {
                throw new IllegalArgumentException("column " + column + " is a struct: its children hold its values");
            }
            return layouts[column] == Layout.VARIABLE;
        }
    }
}
