package ai.chalk.compute.server.auth;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

/**
 * The caller of a transport that asks for no proof: the in-process one (a client in the server's own JVM) and a TCP
 * port started with {@code --auth none}. The call acts in the environment its {@code x-chalk-env-id} header names,
 * {@value Caller#DEFAULT_ENVIRONMENT} without one.
 */
public final class TrustedCallers implements ServerInterceptor {

    /** The header naming the environment a call acts in (what Chalk's clients send). */
    public static final Metadata.Key<String> ENVIRONMENT_HEADER =
            Metadata.Key.of("x-chalk-env-id", Metadata.ASCII_STRING_MARSHALLER);

    private final Caller.Kind kind;

    /** @param kind {@link Caller.Kind#EMBEDDED} or {@link Caller.Kind#UNAUTHENTICATED} */
    public TrustedCallers(Caller.Kind kind) {
        if (kind != Caller.Kind.EMBEDDED && kind != Caller.Kind.UNAUTHENTICATED) {
            throw new IllegalArgumentException(kind + " callers prove who they are");
        }
        this.kind = kind;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String named = headers.get(ENVIRONMENT_HEADER);
        Caller caller;
        try {
            caller =
                    Caller.trusted(named == null || named.isBlank() ? Caller.DEFAULT_ENVIRONMENT : named.strip(), kind);
        } catch (IllegalArgumentException e) {
            call.close(Status.INVALID_ARGUMENT.withDescription("x-chalk-env-id: " + e.getMessage()), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        return Contexts.interceptCall(Context.current().withValue(Caller.KEY, caller), call, headers, next);
    }
}
