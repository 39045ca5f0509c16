package ai.chalk.compute.sandbox;

import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.OutputData;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/**
 * Reads exec responses off the wire with one copy of their output bytes: an output message laid out as protobuf
 * writes it ({@code output_data} holding {@code stream}, then {@code data} up to the end) has its header read field
 * by field and its bytes read straight into an array of their own, which the event keeps (see
 * {@link ExecCall#arrayOf}). gRPC's own parser copies a message into a shared buffer and its bytes out of that again;
 * anything laid out otherwise is read whole and parsed with its bytes aliasing that one array. A message handed over
 * in-process is taken as it is. Requests are written as the generated code does.
 */
final class ExecResponses implements MethodDescriptor.Marshaller<ExecResponse> {

    /** {@code ExecResponse.output_data}: field 2, length-delimited. */
    private static final int OUTPUT_DATA_TAG = 2 << 3 | 2;
    /** {@code OutputData.stream}: field 1, varint. */
    private static final int STREAM_TAG = 1 << 3;
    /** {@code OutputData.data}: field 2, length-delimited. */
    private static final int DATA_TAG = 2 << 3 | 2;
    /** The most header bytes the fast path reads before its output bytes: tags and lengths of at most 5 bytes each. */
    private static final int MAX_HEADER = 16;

    private final MethodDescriptor.Marshaller<ExecResponse> generated =
            SandboxServiceGrpc.getExecMethod().getResponseMarshaller();

    @Override
    public InputStream stream(ExecResponse value) {
        return generated.stream(value);
    }

    @Override
    public ExecResponse parse(InputStream stream) {
        if (stream instanceof Drainable || !(stream instanceof KnownLength)) {
            // in-process: the server's message itself, no bytes to read
            return generated.parse(stream);
        }
        try {
            int size = stream.available();
            Header header = new Header(stream, size);
            ExecResponse output = header.readOutput();
            return output != null ? output : header.readWhole();
        } catch (IOException e) {
            throw Status.INTERNAL
                    .withDescription("cannot parse an exec response from the server: " + e.getMessage())
                    .withCause(e)
                    .asRuntimeException();
        }
    }

    /** The first bytes of one message, read one at a time and kept for {@link #readWhole} when they do not fit. */
    private static final class Header {
        private final InputStream in;
        private final int size;
        private final byte[] read = new byte[MAX_HEADER];
        private int at;

        Header(InputStream in, int size) {
            this.in = in;
            this.size = size;
        }

        /** The message when it is output laid out as expected, its bytes in an array of their own; else null. */
        ExecResponse readOutput() throws IOException {
            if (size < 2 || next() != OUTPUT_DATA_TAG || varint() != size - at) {
                return null;
            }
            int stream = 0;
            while (at < size) {
                int tag = next();
                if (tag == STREAM_TAG) {
                    stream = varint();
                    if (stream < 0) {
                        return null;
                    }
                } else if (tag == DATA_TAG) {
                    int length = varint();
                    if (length != size - at) {
                        return null; // the bytes are not last: read it whole
                    }
                    byte[] data = readFully(length);
                    // the array is this message's alone and nobody writes to it again
                    return output(stream, UnsafeByteOperations.unsafeWrap(data));
                } else {
                    return null;
                }
            }
            return output(stream, com.google.protobuf.ByteString.EMPTY);
        }

        private static ExecResponse output(int stream, com.google.protobuf.ByteString data) {
            return ExecResponse.newBuilder()
                    .setOutputData(
                            OutputData.newBuilder().setStreamValue(stream).setData(data))
                    .build();
        }

        /** The message read whole (with what the header took) and parsed, its bytes aliasing that one array. */
        ExecResponse readWhole() throws IOException {
            byte[] bytes = Arrays.copyOf(read, size);
            if (in.readNBytes(bytes, at, size - at) != size - at || in.read() != -1) {
                throw lengthMismatch();
            }
            CodedInputStream coded = UnsafeByteOperations.unsafeWrap(bytes).newCodedInput();
            coded.enableAliasing(true);
            return ExecResponse.parseFrom(coded);
        }

        private byte[] readFully(int length) throws IOException {
            byte[] data = new byte[length];
            if (in.readNBytes(data, 0, length) != length || in.read() != -1) {
                throw lengthMismatch();
            }
            return data;
        }

        /** The next byte, or -1 once the header has used up its room or the message. */
        private int next() throws IOException {
            if (at >= MAX_HEADER || at >= size) {
                return -1;
            }
            int b = in.read();
            if (b < 0) {
                throw lengthMismatch();
            }
            read[at++] = (byte) b;
            return b;
        }

        /** A varint of at most 5 bytes as a non-negative int, or -1 (which no length or tag matches). */
        private int varint() throws IOException {
            int value = 0;
            for (int shift = 0; shift < 32; shift += 7) {
                int b = next();
                if (b < 0) {
                    return -1;
                }
                value |= (b & 0x7f) << shift;
                if ((b & 0x80) == 0) {
                    return value >= 0 ? value : -1;
                }
            }
            return -1;
        }

        private static RuntimeException lengthMismatch() {
            return Status.INTERNAL
                    .withDescription("an exec response was not the length its frame announced")
                    .asRuntimeException();
        }
    }
}
