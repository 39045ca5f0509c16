package ai.chalk.compute.auth;

import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.proto.server.v1.GetTokenResponse;
import com.google.protobuf.Timestamp;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real {@code chalk.server.v1.AuthService}: checks the client secret, counts exchanges and issues
 * {@code token-1}, {@code token-2}, ... with a chosen lifetime. Rejections echo the secret on purpose, so tests
 * can prove the client never passes it on.
 */
final class RecordingAuthService extends AuthServiceGrpc.AuthServiceImplBase {

    private final Clock clock;
    private final String clientId;
    private final String clientSecret;
    private final AtomicInteger calls = new AtomicInteger();
    private final List<GetTokenRequest> requests = new CopyOnWriteArrayList<>();
    private volatile Duration lifetime = Duration.ofMinutes(10);
    private volatile boolean useExpiresIn;
    private volatile String primaryEnvironment = "env-primary";
    private volatile Status failWith;

    RecordingAuthService(Clock clock, String clientId, String clientSecret) {
        this.clock = clock;
        this.clientId = clientId;
        this.clientSecret = clientSecret;
    }

    @Override
    public void getToken(GetTokenRequest request, StreamObserver<GetTokenResponse> response) {
        int n = calls.incrementAndGet();
        requests.add(request);
        Status failure = failWith;
        if (failure != null) {
            response.onError(failure.asRuntimeException());
            return;
        }
        if (!request.getClientId().equals(clientId)
                || !request.getClientSecret().equals(clientSecret)) {
            response.onError(Status.UNAUTHENTICATED
                    .withDescription("invalid client secret '" + request.getClientSecret() + "' for client "
                            + request.getClientId())
                    .asRuntimeException());
            return;
        }
        Instant now = clock.instant();
        GetTokenResponse.Builder token = GetTokenResponse.newBuilder()
                .setAccessToken("token-" + n)
                .setTokenType("Bearer")
                .setApiServer("http://127.0.0.1")
                .putEnvironmentIdToName("env-primary", "production");
        if (useExpiresIn) {
            token.setExpiresIn((int) lifetime.toSeconds());
        } else {
            Instant expiresAt = now.plus(lifetime);
            token.setExpiresAt(Timestamp.newBuilder()
                    .setSeconds(expiresAt.getEpochSecond())
                    .setNanos(expiresAt.getNano()));
            token.setExpiresIn((int) lifetime.toSeconds());
        }
        if (primaryEnvironment != null) {
            token.setPrimaryEnvironment(primaryEnvironment);
        }
        response.onNext(token.build());
        response.onCompleted();
    }

    int calls() {
        return calls.get();
    }

    List<GetTokenRequest> requests() {
        return requests;
    }

    RecordingAuthService lifetime(Duration lifetime) {
        this.lifetime = lifetime;
        return this;
    }

    /** Sends only {@code expires_in}, no {@code expires_at}. */
    RecordingAuthService onlyExpiresIn() {
        this.useExpiresIn = true;
        return this;
    }

    RecordingAuthService primaryEnvironment(String environment) {
        this.primaryEnvironment = environment;
        return this;
    }

    /** Fails every exchange with this status from now on ({@code null} to stop). */
    RecordingAuthService failWith(Status status) {
        this.failWith = status;
        return this;
    }
}
