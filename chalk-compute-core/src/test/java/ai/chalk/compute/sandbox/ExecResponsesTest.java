package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.ExecResponse;
import ai.chalk.compute.proto.sandbox.v1.OutputData;
import ai.chalk.compute.proto.sandbox.v1.ProcessExited;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import io.grpc.KnownLength;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ExecResponsesTest {

    private final ExecResponses responses = new ExecResponses();

    @Test
    void outputAsProtobufWritesItIsReadIntoAnArrayTheEventKeepsWithoutCopying() {
        byte[] data = new byte[300_000];
        Arrays.fill(data, (byte) 7);
        ExecResponse sent = output(OutputData.Stream.STREAM_STDERR, data);

        ExecResponse read = responses.parse(wire(sent.toByteArray()));

        assertThat(read).isEqualTo(sent);
        byte[] kept = ExecCall.arrayOf(read.getOutputData().getData());
        assertThat(kept).isEqualTo(data);
        assertThat(ExecCall.arrayOf(read.getOutputData().getData())).isSameAs(kept);
    }

    @Test
    void outputWithItsFieldsInAnotherOrderOrWithUnknownFieldsIsReadAsAWhole() throws IOException {
        byte[] data = "hello".getBytes();
        ByteArrayOutputStream inner = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(inner);
        out.writeBytes(2, ByteString.copyFrom(data)); // data before stream
        out.writeEnum(1, OutputData.Stream.STREAM_STDOUT_VALUE);
        out.writeInt32(15, 42); // a field this SDK does not know
        out.flush();
        ByteArrayOutputStream outer = new ByteArrayOutputStream();
        CodedOutputStream message = CodedOutputStream.newInstance(outer);
        message.writeByteArray(2, inner.toByteArray());
        message.flush();

        ExecResponse read = responses.parse(wire(outer.toByteArray()));

        assertThat(read.getOutputData().getStream()).isEqualTo(OutputData.Stream.STREAM_STDOUT);
        assertThat(read.getOutputData().getData().toByteArray()).isEqualTo(data);
        assertThat(ExecCall.arrayOf(read.getOutputData().getData())).isEqualTo(data);
    }

    @Test
    void everyOtherMessageAndEmptyOutputReadAsSent() {
        ExecResponse exited = ExecResponse.newBuilder()
                .setProcessExited(ProcessExited.newBuilder().setExitCode(3))
                .build();
        ExecResponse empty = output(OutputData.Stream.STREAM_UNSPECIFIED, new byte[0]);
        ExecResponse pty = output(OutputData.Stream.STREAM_PTY_OUTPUT, new byte[] {1});

        assertThat(responses.parse(wire(exited.toByteArray()))).isEqualTo(exited);
        assertThat(responses.parse(wire(empty.toByteArray()))).isEqualTo(empty);
        assertThat(responses.parse(wire(pty.toByteArray()))).isEqualTo(pty);
        assertThat(responses.parse(wire(new byte[0]))).isEqualTo(ExecResponse.getDefaultInstance());
    }

    @Test
    void aMessageShorterThanItsFrameSaysIsAnInternalError() {
        byte[] whole = output(OutputData.Stream.STREAM_STDOUT, new byte[1000]).toByteArray();
        KnownLengthStream truncated = new KnownLengthStream(Arrays.copyOf(whole, 500)) {
            @Override
            public synchronized int available() {
                return whole.length; // what the frame announced
            }
        };

        assertThatThrownBy(() -> responses.parse(truncated))
                .isInstanceOf(StatusRuntimeException.class)
                .hasMessageContaining("not the length its frame announced");
    }

    @Test
    void bytesThatShareAnArrayWithOthersAreCopiedOut() {
        byte[] shared = {1, 2, 3, 4};
        byte[] part = ExecCall.arrayOf(ByteString.copyFrom(shared).substring(1, 3));

        assertThat(part).containsExactly(2, 3);
    }

    private static ExecResponse output(OutputData.Stream stream, byte[] data) {
        return ExecResponse.newBuilder()
                .setOutputData(OutputData.newBuilder().setStream(stream).setData(ByteString.copyFrom(data)))
                .build();
    }

    /** A message as the transport hands it to the parser: a stream that knows its length. */
    private static KnownLengthStream wire(byte[] bytes) {
        return new KnownLengthStream(bytes);
    }

    private static class KnownLengthStream extends ByteArrayInputStream implements KnownLength {
        KnownLengthStream(byte[] bytes) {
            super(bytes);
        }
    }
}
