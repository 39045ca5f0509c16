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
 * same batch (the same metadata, buffers and padding), and reads such a stream in place. Anything else it declines
 * ({@code null}), and the caller takes {@link ArrowIpc}'s general path.
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
     * Reads an IPC stream that holds a schema and exactly one batch of flat columns, in place.
     *
     * @return the batch, or {@code null} when the bytes are anything else (a file, dictionaries, compression, nested or
     *         other types, several batches, or malformed): {@link ArrowIpc#read} then reads them, or says what is wrong
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
        Layout[] layouts = new Layout[fields.size()];
        int expectedBuffers = 0;
        for (int i = 0; i < layouts.length; i++) {
            layouts[i] = Layout.of(fields.get(i));
            if (layouts[i] == null) {
                return null;
            }
            expectedBuffers += layouts[i].buffers();
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
                || batch.nodesLength() != fields.size()
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
        int[] nullCounts = new int[fields.size()];
        int[] starts = new int[expectedBuffers];
        int[] sizes = new int[expectedBuffers];
        org.apache.arrow.flatbuf.FieldNode node = new org.apache.arrow.flatbuf.FieldNode();
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
        int b = 0;
        int validityBytes = (rows + 7) / 8;
        for (int i = 0; i < fields.size(); i++) {
            batch.nodes(node, i);
            if (node.length() != rows || node.nullCount() < 0 || node.nullCount() > rows) {
                return null;
            }
            nullCounts[i] = (int) node.nullCount();
            if (nullCounts[i] > 0 && sizes[b] < validityBytes) {
                return null;
            }
            Layout layout = layouts[i];
            if (layout == Layout.VARIABLE && rows > 0 && sizes[b + 1] < (rows + 1) * Integer.BYTES) {
                return null;
            }
            if (layout == Layout.BITS && sizes[b + 1] < validityBytes) {
                return null;
            }
            if (layout == Layout.FIXED
                    && (long) sizes[b + 1] < (long) rows * width(fields.get(i).getType())) {
                return null;
            }
            b += layout.buffers();
        }
        return new Batch(schema, rows, bytes, layouts, nullCounts, starts, sizes);
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
     * One batch read in place: its buffers are ranges of the payload's bytes.
     */
    public static final class Batch {
        private final Schema schema;
        private final int rows;
        private final byte[] bytes;
        private final int[] nullCounts;
        private final int[] starts;
        private final int[] sizes;
        /** The index of each column's first buffer (its validity bitmap). */
        private final int[] first;

        private Batch(
                Schema schema, int rows, byte[] bytes, Layout[] layouts, int[] nullCounts, int[] starts, int[] sizes) {
            this.schema = schema;
            this.rows = rows;
            this.bytes = bytes;
            this.nullCounts = nullCounts;
            this.starts = starts;
            this.sizes = sizes;
            this.first = new int[layouts.length];
            int b = 0;
            for (int i = 0; i < layouts.length; i++) {
                first[i] = b;
                b += layouts[i].buffers();
            }
        }

        /** The payload's schema. */
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

        /** Whether a column's value in a row is null. */
        public boolean isNull(int column, int row) {
            if (nullCounts[column] == 0) {
                return false;
            }
            int validity = starts[first[column]];
            return (bytes[validity + (row >>> 3)] & (1 << (row & 7))) == 0;
        }

        /** Where the values of a column start in {@link #bytes()} (its bits, fixed-width values, or bytes). */
        public int valuesStart(int column) {
            return starts[first[column] + (isVariable(column) ? 2 : 1)];
        }

        /** How many bytes its values take. */
        public int valuesLength(int column) {
            return sizes[first[column] + (isVariable(column) ? 2 : 1)];
        }

        /** Where a variable-width column's 32-bit offsets start in {@link #bytes()}. */
        public int offsetsStart(int column) {
            return starts[first[column] + 1];
        }

        private boolean isVariable(int column) {
            int next = column + 1 < first.length ? first[column + 1] : starts.length;
            return next - first[column] == 3;
        }
    }
}
