package ai.chalk.compute.auth;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CopyOnWriteArraySet;

/** Records the auth headers of every call to the services behind it, and rejects revoked tokens. */
final class MetadataRecorder implements ServerInterceptor {

    /** The headers one call arrived with. */
    record Seen(String method, String authorization, String environment) {}

    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final Set<String> revoked = new CopyOnWriteArraySet<>();

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        String authorization = headers.get(ChalkAuthInterceptor.AUTHORIZATION);
        seen.add(new Seen(
                call.getMethodDescriptor().getFullMethodName(),
                authorization,
                headers.get(ChalkAuthInterceptor.ENVIRONMENT)));
        if (authorization == null
                || !authorization.startsWith("Bearer ")
                || revoked.contains(authorization.substring("Bearer ".length()))) {
            call.close(Status.UNAUTHENTICATED.withDescription("no valid bearer token"), new Metadata());
            return new ServerCall.Listener<>() {};
        }
        return next.startCall(call, headers);
    }

    List<Seen> seen() {
        return seen;
    }

    Seen last() {
        return seen.get(seen.size() - 1);
    }

    void revoke(String token) {
        revoked.add(token);
    }
}
