package ai.chalk.compute.server.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Calls with raw bytes as the request, as a hostile client sends them: no stub, no protobuf. */
final class RawCalls {

    private RawCalls() {}

    static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    static MethodDescriptor<byte[], byte[]> method(MethodDescriptor<?, ?> real) {
        return MethodDescriptor.<byte[], byte[]>newBuilder()
                .setType(real.getType())
                .setFullMethodName(real.getFullMethodName())
                .setRequestMarshaller(BYTES)
                .setResponseMarshaller(BYTES)
                .build();
    }

    /** Sends {@code messages} on one call of {@code method}, half-closes, and completes with the call's status. */
    static CompletableFuture<Status> send(Channel channel, MethodDescriptor<?, ?> method, byte[]... messages) {
        CompletableFuture<Status> status = new CompletableFuture<>();
        ClientCall<byte[], byte[]> call =
                channel.newCall(method(method), CallOptions.DEFAULT.withDeadlineAfter(60, TimeUnit.SECONDS));
        call.start(
                new ClientCall.Listener<>() {
                    @Override
                    public void onClose(Status s, Metadata trailers) {
                        status.complete(s);
                    }
                },
                new Metadata());
        call.request(Integer.MAX_VALUE);
        for (byte[] m : messages) {
            call.sendMessage(m);
        }
        call.halfClose();
        return status;
    }
}
