package ai.chalk.compute.server.auth;

import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.proto.server.v1.GetTokenResponse;
import ai.chalk.compute.proto.server.v1.GetWorkloadIdentityTokenRequest;
import ai.chalk.compute.proto.server.v1.GetWorkloadIdentityTokenResponse;
import ai.chalk.compute.server.grpc.PeerAddress;
import com.google.protobuf.Timestamp;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * {@code chalk.server.v1.AuthService}: client credentials exchanged for an access token ({@code GetToken}), and
 * identity tokens for third parties ({@code GetWorkloadIdentityToken}).
 */
final class AuthServiceV1 extends AuthServiceGrpc.AuthServiceImplBase {

    /** An access token lives this long unless the request asks for less. */
    static final Duration ACCESS_LIFETIME = Duration.ofHours(1);
    /** The longest access token a request may ask for. */
    static final Duration LONGEST_ACCESS = Duration.ofHours(24);
    /** Identity tokens are for one exchange with a third party. */
    static final Duration IDENTITY_LIFETIME = Duration.ofMinutes(10);

    private static final Context.Key<String> PEER = Context.key("chalk-auth-peer");

    private final ClientCredentials credentials;
    private final Tokens tokens;
    private final FailedAttempts failures;
    private final ScheduledExecutorService timers;
    private final Supplier<Optional<String>> grpcUrl;

    AuthServiceV1(
            ClientCredentials credentials,
            Tokens tokens,
            FailedAttempts failures,
            ScheduledExecutorService timers,
            Supplier<Optional<String>> grpcUrl) {
        this.credentials = credentials;
        this.tokens = tokens;
        this.failures = failures;
        this.timers = timers;
        this.grpcUrl = grpcUrl;
    }

    /** The service with what it needs of the transport: the peer, whose failures slow it down. */
    ServerServiceDefinition definition() {
        return ServerInterceptors.intercept(this, new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(
                    ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
                // kept with the connection: a loopback peer's key reads the kernel's socket table
                String peer = PeerAddress.ofCall(call.getAttributes());
                Context context = Context.current().withValue(PEER, peer);
                return Contexts.interceptCall(context, call, headers, next);
            }
        });
    }

    @Override
    public void getToken(GetTokenRequest request, StreamObserver<GetTokenResponse> response) {
        String grant = request.getGrantType();
        if (!grant.isEmpty() && !grant.equals("client_credentials")) {
            response.onError(Status.INVALID_ARGUMENT
                    .withDescription("grant_type \"" + grant + "\" is not supported:"
                            + " this server exchanges client credentials (grant_type client_credentials)")
                    .asRuntimeException());
            return;
        }
        String peer = PEER.get();
        Duration delay = failures.delay(peer);
        Optional<ClientCredentials.Credential> credential =
                credentials.check(request.getClientId(), request.getClientSecret());
        Runnable answer;
        if (credential.isEmpty()) {
            failures.failed(peer);
            answer = () -> response.onError(Status.UNAUTHENTICATED
                    .withDescription("the client id or secret is not"
                            + " valid, or the credential was revoked: check CHALK_CLIENT_ID and CHALK_CLIENT_SECRET (or"
                            + " ~/.chalk.yml), or make a credential with `chalk-compute-server credentials create`")
                    .asRuntimeException());
        } else {
            GetTokenResponse token = issue(credential.get(), request);
            answer = () -> {
                response.onNext(token);
                response.onCompleted();
            };
        }
        if (delay.isZero()) {
            answer.run();
        } else {
            timers.schedule(answer, delay.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private GetTokenResponse issue(ClientCredentials.Credential credential, GetTokenRequest request) {
        Duration lifetime = ACCESS_LIFETIME;
        if (request.hasExpiresAt()) {
            Duration asked = Duration.ofSeconds(
                    request.getExpiresAt().getSeconds(), request.getExpiresAt().getNanos());
            if (!asked.isNegative() && !asked.isZero()) {
                lifetime = asked.compareTo(LONGEST_ACCESS) > 0 ? LONGEST_ACCESS : asked;
            }
        }
        String environment = credential.environment();
        Caller caller = new Caller(environment, "client:" + credential.id(), Caller.Kind.CLIENT);
        Tokens.Issued issued = tokens.access(caller, Optional.of(credential.id()), lifetime);
        GetTokenResponse.Builder b = GetTokenResponse.newBuilder()
                .setAccessToken(issued.token())
                .setTokenType("Bearer")
                .setExpiresIn((int) lifetime.toSeconds())
                .setExpiresAt(timestamp(issued.expiresAt()))
                .setPrimaryEnvironment(environment)
                .putEnvironmentIdToName(environment, environment);
        grpcUrl.get().ifPresent(url -> b.setApiServer(url).putGrpcEngines(environment, url));
        return b.build();
    }

    @Override
    public void getWorkloadIdentityToken(
            GetWorkloadIdentityTokenRequest request, StreamObserver<GetWorkloadIdentityTokenResponse> response) {
        Caller caller = Caller.current();
        if (caller.kind() == Caller.Kind.UNAUTHENTICATED) {
            response.onError(Status.UNAUTHENTICATED
                    .withDescription("an identity token is minted for a caller that"
                            + " proved who it is: call with an access token")
                    .asRuntimeException());
            return;
        }
        String audience = request.getAudience().strip();
        if (audience.isEmpty() || audience.length() > 1000) {
            response.onError(Status.INVALID_ARGUMENT
                    .withDescription("audience must name who the token is for, e.g."
                            + " sts.amazonaws.com or https://vault.example.com (1 to 1000 characters)")
                    .asRuntimeException());
            return;
        }
        Tokens.Issued issued = tokens.identity(caller, audience, IDENTITY_LIFETIME);
        response.onNext(GetWorkloadIdentityTokenResponse.newBuilder()
                .setToken(issued.token())
                .setExpiresAt(timestamp(issued.expiresAt()))
                .setIssuer(tokens.issuer())
                .setSubject(caller.subject())
                .build());
        response.onCompleted();
    }

    private static Timestamp timestamp(Instant t) {
        return Timestamp.newBuilder()
                .setSeconds(t.getEpochSecond())
                .setNanos(t.getNano())
                .build();
    }
}
