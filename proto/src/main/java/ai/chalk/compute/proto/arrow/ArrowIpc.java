package ai.chalk.compute.proto.arrow;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageChannelReader;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.MetadataVersion;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.validate.MetadataV4UnionChecker;

/**
 * Arrow IPC bytes: writes the stream format; reads the stream format and the file (Feather v2) format. Function
 * payloads on the wire are these bytes; the SDK (arguments and results) and the server (evaluation runs) both use this
 * class.
 *
 * <p>Arrow's own channels move buffers through {@code ArrowBuf.nioBuffer()}, which on JDK 17 needs
 * {@code --add-opens java.base/java.nio}. The channels here copy through heap arrays instead, so that no
 * application has to add JVM flags to call a function; payloads are small enough for the copy not to matter.
 */
public final class ArrowIpc {

    private static final byte[] FILE_MAGIC = "ARROW1".getBytes(StandardCharsets.US_ASCII);
    private static final int CHUNK = 1 << 20;
    private static final int CACHED_SCHEMAS = 256;
    /**
     * The largest schema message kept. A function's is a few hundred bytes; a peer sending another 30 MiB schema (one
     * field name of that size) with each payload, as deployed code answering calls can, would otherwise have filled
     * the cache's places with gigabytes, held by every reader in the JVM until the places ran out.
     */
    static final int CACHED_SCHEMA_BYTES = 16 << 10;
    /** Parsed schemas by their IPC message (immutable, so shared by every read). */
    private static final Map<SchemaMessage, Schema> SCHEMAS = new ConcurrentHashMap<>();

    private ArrowIpc() {}

    /** The root's schema and its one batch, as an IPC stream. */
    public static byte[] write(VectorSchemaRoot root) {
        return write(schemaMessage(root.getSchema()), root);
    }

    /**
     * A schema's IPC message, as {@link #write(byte[], VectorSchemaRoot)} takes it: a codec that writes many payloads
     * of one schema serialises it once.
     */
    public static byte[] schemaMessage(Schema schema) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (WriteChannel channel = new WriteChannel(Channels.newChannel(out))) {
            MessageSerializer.serialize(channel, schema, IpcOption.DEFAULT);
        } catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e); // a ByteArrayOutputStream does not fail
        }
        return out.toByteArray();
    }

    /**
     * The root's one batch as an IPC stream that starts with {@code schemaMessage}, the {@link #schemaMessage} of the
     * root's schema.
     */
    public static byte[] write(byte[] schemaMessage, VectorSchemaRoot root) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(schemaMessage.length + 256);
        try (HeapWriteChannel channel = new HeapWriteChannel(Channels.newChannel(out))) {
            channel.write(schemaMessage); // counted in the channel's position, which aligns what follows
            try (ArrowRecordBatch batch = new VectorUnloader(root).getRecordBatch()) {
                MessageSerializer.serialize(channel, batch, IpcOption.DEFAULT);
            }
            ArrowStreamWriter.writeEndOfStream(channel, IpcOption.DEFAULT);
        } catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e); // a ByteArrayOutputStream does not fail
        }
        return out.toByteArray();
    }

    /**
     * Reads every batch, handing each to the consumer while its vectors are loaded.
     *
     * @return the payload's schema
     * @throws IllegalArgumentException when the bytes are not an Arrow IPC stream or file
     */
    public static Schema read(byte[] bytes, BufferAllocator allocator, Consumer<VectorSchemaRoot> batches) {
        boolean file =
                bytes.length >= FILE_MAGIC.length && Arrays.equals(Arrays.copyOf(bytes, FILE_MAGIC.length), FILE_MAGIC);
        try {
            int start = file ? 8 : 0; // a file's magic is padded to 8 bytes
            int end = file ? fileMessagesEnd(bytes) : bytes.length;
            checkFraming(bytes, start, end);
            int schemaEnd = schemaMessageEnd(bytes, start, end);
            Schema known = schemaEnd < 0 ? null : schema(bytes, start, schemaEnd);
            int from = known == null ? start : schemaEnd; // a known schema's message is not read again
            ByteArrayInputStream in = new ByteArrayInputStream(bytes, from, end - from);
            MessageChannelReader messages =
                    new MessageChannelReader(new HeapReadChannel(Channels.newChannel(in)), allocator);
            try (ArrowReader reader = known == null
                    ? new ArrowStreamReader(messages, allocator)
                    : new ArrowStreamReader(messages, allocator) {
                        @Override
                        protected Schema readSchema() {
                            return known;
                        }
                    }) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                while (reader.loadNextBatch()) {
                    deliver(batches, root);
                }
                return root.getSchema();
            }
        } catch (ConsumerFailure f) {
            throw (RuntimeException) f.getCause();
        } catch (IOException | RuntimeException e) {
            // Arrow reports malformed input with assorted runtime exceptions
            throw new IllegalArgumentException(
                    "the payload is not a readable Arrow IPC " + (file ? "file" : "stream") + " (" + bytes.length
                            + " bytes): " + e.getMessage(),
                    e);
        }
    }

    /**
     * Where the stream's first message ends when it is a schema (which has no body), as checked by
     * {@link #checkFraming}; -1 otherwise.
     */
    static int schemaMessageEnd(byte[] bytes, int start, int end) {
        ByteBuffer in = ByteBuffer.wrap(bytes, start, end - start).slice().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        if (in.remaining() < 2 * Integer.BYTES) {
            return -1;
        }
        int length = in.getInt();
        if (length == 0xFFFFFFFF) {
            length = in.getInt();
        }
        if (length <= 0 || length > in.remaining()) {
            return -1;
        }
        ByteBuffer metadata = in.slice().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        metadata.limit(length);
        org.apache.arrow.flatbuf.Message message = org.apache.arrow.flatbuf.Message.getRootAsMessage(metadata);
        if (message.headerType() != org.apache.arrow.flatbuf.MessageHeader.Schema || message.bodyLength() != 0) {
            return -1;
        }
        return start + in.position() + length;
    }

    /**
     * The schema whose IPC message is {@code bytes[start, end)}: parsed once per distinct message, since every payload
     * of a function (arguments or results) starts with the same one and parsing it costs a call more than its batch.
     */
    static Schema schema(byte[] bytes, int start, int end) throws IOException {
        if (end - start > CACHED_SCHEMA_BYTES) {
            return parseSchema(ByteBuffer.wrap(bytes, start, end - start));
        }
        SchemaMessage key = new SchemaMessage(Arrays.copyOfRange(bytes, start, end));
        Schema known = SCHEMAS.get(key);
        if (known != null) {
            return known;
        }
        Schema schema = parseSchema(ByteBuffer.wrap(key.bytes()));
        if (SCHEMAS.size() >= CACHED_SCHEMAS) {
            SCHEMAS.clear(); // many schemas seen: start over rather than keep them all
        }
        SCHEMAS.put(key, schema);
        return schema;
    }

    /** The schema of the IPC message that starts at {@code in}'s position. */
    private static Schema parseSchema(ByteBuffer in) throws IOException {
        in.order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int length = in.getInt();
        if (length == 0xFFFFFFFF) {
            length = in.getInt();
        }
        ByteBuffer metadata = in.slice().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        metadata.limit(length);
        org.apache.arrow.flatbuf.Message message = org.apache.arrow.flatbuf.Message.getRootAsMessage(metadata);
        Schema schema = MessageSerializer.deserializeSchema(message);
        // as ArrowStreamReader.readSchema checks it
        MetadataV4UnionChecker.checkRead(schema, MetadataVersion.fromFlatbufID(message.version()));
        return schema;
    }

    /** The bytes of the schema messages cached now. */
    static long cachedSchemaBytes() {
        return SCHEMAS.keySet().stream().mapToLong(k -> k.bytes().length).sum();
    }

    /** A schema's IPC message, compared by content. */
    private record SchemaMessage(byte[] bytes) {
        @Override
        public boolean equals(Object o) {
            return o instanceof SchemaMessage other && Arrays.equals(bytes, other.bytes);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(bytes);
        }

        @Override
        public String toString() {
            return "SchemaMessage[" + bytes.length + " bytes]";
        }
    }

    /**
     * Checks that every message's stated lengths fit in the bytes there are, before Arrow allocates
     * buffers of those lengths: a few bytes of garbage must not ask for gigabytes.
     */
    private static void checkFraming(byte[] bytes, int start, int end) {
        ByteBuffer in = ByteBuffer.wrap(bytes, start, end - start).slice().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        while (in.remaining() >= Integer.BYTES) {
            int length = in.getInt();
            if (length == 0xFFFFFFFF) { // the continuation marker precedes the length since Arrow 0.15
                if (in.remaining() < Integer.BYTES) {
                    throw new IllegalArgumentException("it ends inside a message header");
                }
                length = in.getInt();
            }
            if (length == 0) {
                return; // end of stream
            }
            if (length < 0 || length > in.remaining()) {
                throw new IllegalArgumentException("a message claims " + Integer.toUnsignedString(length)
                        + " bytes of metadata but " + in.remaining() + " remain");
            }
            ByteBuffer metadata = in.slice();
            metadata.limit(length);
            long body = org.apache.arrow.flatbuf.Message.getRootAsMessage(
                            metadata.order(java.nio.ByteOrder.LITTLE_ENDIAN))
                    .bodyLength();
            in.position(in.position() + length);
            if (body < 0 || body > in.remaining()) {
                throw new IllegalArgumentException(
                        "a message claims a body of " + body + " bytes but " + in.remaining() + " remain");
            }
            in.position(in.position() + (int) body);
        }
    }

    /**
     * Where the messages of an IPC file end: they are a stream between the leading magic and the footer, read as
     * a stream because Arrow's file reader parses batch metadata through {@code nioBuffer()} too.
     */
    private static int fileMessagesEnd(byte[] bytes) {
        int trailer = Integer.BYTES + FILE_MAGIC.length;
        int start = 8;
        if (bytes.length < start + trailer) {
            throw new IllegalArgumentException("too short for an Arrow IPC file");
        }
        int footerLength = ByteBuffer.wrap(bytes, bytes.length - trailer, Integer.BYTES)
                .order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .getInt();
        int end = bytes.length - trailer - footerLength;
        if (footerLength <= 0 || end < start) {
            throw new IllegalArgumentException("the file's footer length " + footerLength + " is invalid");
        }
        return end;
    }

    private static void deliver(Consumer<VectorSchemaRoot> batches, VectorSchemaRoot root) {
        try {
            batches.accept(root);
        } catch (RuntimeException e) {
            throw new ConsumerFailure(e);
        }
    }

    /** Fills an Arrow buffer from a channel through a heap array, as {@link ReadChannel#readFully(ArrowBuf, long)} does directly. */
    private static long readThroughHeap(ReadChannel channel, ArrowBuf buffer, long length) throws IOException {
        long left = length;
        byte[] chunk = new byte[(int) Math.min(CHUNK, Math.max(left, 0))];
        while (left > 0) {
            int wanted = (int) Math.min(left, chunk.length);
            int read = channel.readFully(ByteBuffer.wrap(chunk, 0, wanted));
            buffer.setBytes(buffer.writerIndex(), chunk, 0, read);
            buffer.writerIndex(buffer.writerIndex() + read);
            left -= read;
            if (read < wanted) {
                break;
            }
        }
        return length - left;
    }

    /** Writes Arrow buffers through a heap array. */
    private static final class HeapWriteChannel extends WriteChannel {

        HeapWriteChannel(WritableByteChannel out) {
            super(out);
        }

        @Override
        public void write(ArrowBuf buffer) throws IOException {
            long start = buffer.readerIndex();
            long length = buffer.readableBytes();
            byte[] chunk = new byte[(int) Math.min(CHUNK, length)];
            for (long written = 0; written < length; ) {
                int size = (int) Math.min(chunk.length, length - written);
                buffer.getBytes(start + written, chunk, 0, size);
                write(ByteBuffer.wrap(chunk, 0, size));
                written += size;
            }
        }
    }

    /** Reads a stream into Arrow buffers through a heap array. */
    private static final class HeapReadChannel extends ReadChannel {

        HeapReadChannel(ReadableByteChannel in) {
            super(in);
        }

        @Override
        public long readFully(ArrowBuf buffer, long length) throws IOException {
            return readThroughHeap(this, buffer, length);
        }
    }

    /** Carries a failure of the consumer past the handler for malformed input. */
    private static final class ConsumerFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ConsumerFailure(RuntimeException cause) {
            super(cause);
        }
    }
}
