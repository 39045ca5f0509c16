package ai.chalk.compute.server.grpc;

import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * Closes a call whose service let an exception escape (a manager's {@link ai.chalk.compute.server.error.
 * ComputeException}, say) with the status {@link StatusErrors#toStatus} gives it, instead of grpc-java's
 * {@code UNKNOWN} and a stack trace: services need not catch what they do not handle (spring-grpc's
 * {@code GrpcExceptionHandlerInterceptor} is the model).
 */
public final class FailuresToStatus implements ServerInterceptor {

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
            ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        ServerCall.Listener<ReqT> listener;
        try {
            listener = next.startCall(call, headers);
        } catch (RuntimeException e) {
            close(call, e);
            return new ServerCall.Listener<>() {};
        }
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onMessage(ReqT message) {
                guard(() -> super.onMessage(message));
            }

            @Override
            public void onHalfClose() {
                guard(super::onHalfClose);
            }

            @Override
            public void onReady() {
                guard(super::onReady);
            }

            private void guard(Runnable step) {
                try {
                    step.run();
                } catch (RuntimeException e) {
                    close(call, e);
                }
            }
        };
    }

    private static void close(ServerCall<?, ?> call, RuntimeException e) {
        Status status = StatusErrors.toStatus(e);
        // a status the service chose keeps its trailers: error details travel in them
        Metadata trailers = e instanceof StatusRuntimeException sre && sre.getTrailers() != null
                ? sre.getTrailers()
                : new Metadata();
        try {
            call.close(status, trailers);
        } catch (IllegalStateException alreadyClosed) {
            // the service had answered before it failed; nothing more can be said
        }
    }
}
