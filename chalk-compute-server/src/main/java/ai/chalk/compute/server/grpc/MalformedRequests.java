package ai.chalk.compute.server.grpc;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers a request message that does not parse with {@code INVALID_ARGUMENT}, at the edge of every
 * service. Left to grpc-java, a parse failure becomes {@code UNKNOWN "Application error processing RPC"}
 * and a stack trace in the log per message, which lets anyone who reaches the port flood the log; here
 * it is one brief WARN per {@link #LOG_WINDOW} at most, and the service never sees the message.
 *
 * <p>It swaps each method's request marshaller for one that never throws (it hands on the parse failure
 * instead), so it has to wrap the service definition rather than sit in a {@link io.grpc.ServerInterceptor}:
 * interceptors only see messages that were already parsed.
 */
public final class MalformedRequests {

    private static final Logger log = LoggerFactory.getLogger(MalformedRequests.class);
    /** At most one log line per window about malformed requests, whatever their number. */
    public static final Duration LOG_WINDOW = Duration.ofSeconds(10);

    private static final LogThrottle THROTTLE = new LogThrottle(log, LOG_WINDOW);

    private MalformedRequests() {}

    /** {@code service} with every method's malformed requests answered INVALID_ARGUMENT. */
    public static ServerServiceDefinition guard(ServerServiceDefinition service) {
        ServiceDescriptor original = service.getServiceDescriptor();
        ServiceDescriptor.Builder descriptor =
                ServiceDescriptor.newBuilder(original.getName()).setSchemaDescriptor(original.getSchemaDescriptor());
        List<ServerMethodDefinition<?, ?>> methods = new ArrayList<>();
        for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
            ServerMethodDefinition<?, ?> m = guardMethod(method);
            methods.add(m);
            descriptor.addMethod(m.getMethodDescriptor());
        }
        ServerServiceDefinition.Builder guarded = ServerServiceDefinition.builder(descriptor.build());
        methods.forEach(guarded::addMethod);
        return guarded.build();
    }

    private static <ReqT, RespT> ServerMethodDefinition<Parsed<ReqT>, RespT> guardMethod(
            ServerMethodDefinition<ReqT, RespT> definition) {
        MethodDescriptor<ReqT, RespT> method = definition.getMethodDescriptor();
        MethodDescriptor<Parsed<ReqT>, RespT> wire = method.toBuilder(
                        new ParsingMarshaller<>(method.getRequestMarshaller()), method.getResponseMarshaller())
                .build();
        return ServerMethodDefinition.create(wire, new GuardedHandler<>(method, definition.getServerCallHandler()));
    }

    /** A request as it came off the wire: the message, or why it is not one. */
    record Parsed<T>(T message, String failure) {}

    /** The service's own marshaller, with its parse failure handed on rather than thrown. */
    private record ParsingMarshaller<T>(MethodDescriptor.Marshaller<T> delegate)
            implements MethodDescriptor.Marshaller<Parsed<T>> {

        @Override
        public InputStream stream(Parsed<T> value) {
            return delegate.stream(value.message());
        }

        @Override
        public Parsed<T> parse(InputStream stream) {
            try {
                return new Parsed<>(delegate.parse(stream), null);
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                String why = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
                return new Parsed<>(null, why.length() > 200 ? why.substring(0, 200) + "..." : why);
            }
        }
    }

    private record GuardedHandler<ReqT, RespT>(
            MethodDescriptor<ReqT, RespT> method, ServerCallHandler<ReqT, RespT> next)
            implements ServerCallHandler<Parsed<ReqT>, RespT> {

        @Override
        public ServerCall.Listener<Parsed<ReqT>> startCall(ServerCall<Parsed<ReqT>, RespT> call, Metadata headers) {
            GuardedCall<ReqT, RespT> inner = new GuardedCall<>(call, method);
            ServerCall.Listener<ReqT> listener = next.startCall(inner, headers);
            return new ServerCall.Listener<>() {
                @Override
                public void onMessage(Parsed<ReqT> request) {
                    if (inner.refused()) {
                        return;
                    }
                    if (request.failure() == null) {
                        listener.onMessage(request.message());
                        return;
                    }
                    String type = method.getFullMethodName();
                    THROTTLE.warn("Refused a malformed request to " + type + " from "
                            + call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR) + ": " + request.failure());
                    inner.refuse(Status.INVALID_ARGUMENT.withDescription("the request to " + type
                            + " is not a valid protobuf message of its type (" + request.failure()
                            + "); send a message encoded from Chalk's published .proto files"));
                    listener.onCancel(); // the service cleans up as for a client that went away
                }

                @Override
                public void onHalfClose() {
                    if (!inner.refused()) {
                        listener.onHalfClose();
                    }
                }

                @Override
                public void onCancel() {
                    if (!inner.refused()) {
                        listener.onCancel();
                    }
                }

                @Override
                public void onComplete() {
                    if (!inner.refused()) {
                        listener.onComplete();
                    }
                }

                @Override
                public void onReady() {
                    if (!inner.refused()) {
                        listener.onReady();
                    }
                }
            };
        }
    }

    /** The call as the service sees it; once refused, the service's late sends are dropped. */
    private static final class GuardedCall<ReqT, RespT> extends ServerCall<ReqT, RespT> {
        private final ServerCall<Parsed<ReqT>, RespT> wire;
        private final MethodDescriptor<ReqT, RespT> method;
        private volatile boolean refused;

        GuardedCall(ServerCall<Parsed<ReqT>, RespT> wire, MethodDescriptor<ReqT, RespT> method) {
            this.wire = wire;
            this.method = method;
        }

        boolean refused() {
            return refused;
        }

        synchronized void refuse(Status status) {
            refused = true;
            wire.close(status, new Metadata());
        }

        @Override
        public void request(int numMessages) {
            if (!refused) {
                wire.request(numMessages);
            }
        }

        @Override
        public synchronized void sendHeaders(Metadata headers) {
            if (!refused) {
                wire.sendHeaders(headers);
            }
        }

        @Override
        public synchronized void sendMessage(RespT message) {
            if (!refused) {
                wire.sendMessage(message);
            }
        }

        @Override
        public synchronized void close(Status status, Metadata trailers) {
            if (!refused) {
                wire.close(status, trailers);
            }
        }

        @Override
        public boolean isReady() {
            return !refused && wire.isReady();
        }

        @Override
        public boolean isCancelled() {
            return refused || wire.isCancelled();
        }

        @Override
        public void setMessageCompression(boolean enabled) {
            wire.setMessageCompression(enabled);
        }

        @Override
        public void setCompression(String compressor) {
            wire.setCompression(compressor);
        }

        @Override
        public Attributes getAttributes() {
            return wire.getAttributes();
        }

        @Override
        public String getAuthority() {
            return wire.getAuthority();
        }

        @Override
        public MethodDescriptor<ReqT, RespT> getMethodDescriptor() {
            return method;
        }
    }
}
