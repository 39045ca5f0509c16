package ai.chalk.compute.server.grpc;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Adds why the server is unhealthy to the trailers of the calls it wraps (the health service's): the
 * standard {@code HealthCheckResponse} has a status and no room for a reason, and an operator whose check
 * says NOT_SERVING needs to know what to fix.
 */
public final class UnhealthyReason implements ServerInterceptor {

    /** The trailer holding the reason, a sentence; absent while healthy. */
    public static final Metadata.Key<String> KEY =
            Metadata.Key.of("chalk-unhealthy-reason", Metadata.ASCII_STRING_MARSHALLER);

    private final Supplier<Optional<String>> reason;

    public UnhealthyReason(Supplier<Optional<String>> reason) {
        this.reason = reason;
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
            ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        return next.startCall(
                new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void close(Status status, Metadata trailers) {
                        reason.get().ifPresent(r -> trailers.put(KEY, r.replaceAll("[^\\x20-\\x7e]", "?")));
                        super.close(status, trailers);
                    }
                },
                headers);
    }
}
