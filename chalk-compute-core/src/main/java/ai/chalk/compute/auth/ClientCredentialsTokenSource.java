package ai.chalk.compute.auth;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.error.AuthenticationException;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.proto.server.v1.GetTokenResponse;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exchanges a client id and secret for an access token with Chalk's {@code chalk.server.v1.AuthService/GetToken}
 * (grant type {@value #GRANT_TYPE}), caches it, and exchanges again shortly before it expires.
 *
 * <pre>{@code
 * try (TokenSource tokens = ClientCredentialsTokenSource.builder()
 *         .clientId(id).clientSecret(secret)
 *         .apiServer("https://api.chalk.ai")
 *         .build()) {
 *     AccessToken token = tokens.token();
 * }
 * }</pre>
 *
 * <p>The token's environment is the one set with {@link Builder#environment(String)}, else the
 * {@code primary_environment} the server names. Its lifetime is the response's {@code expires_at}, else
 * {@code expires_in}, else one hour; it is refreshed {@link Builder#refreshBefore(Duration) a minute} (at most
 * half its lifetime) before that. While a refresh fails, the previous token is used until it actually expires.
 * Concurrent callers share one exchange. The secret never appears in logs, messages or {@link #toString()}.
 */
public final class ClientCredentialsTokenSource implements TokenSource {

    /** The OAuth grant type sent with every exchange. */
    public static final String GRANT_TYPE = "client_credentials";
    /** How long before expiry a token is refreshed, by default. */
    public static final Duration DEFAULT_REFRESH_BEFORE = Duration.ofMinutes(1);
    /** How long one exchange may take, by default. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    /** The lifetime assumed for a token whose response states none. */
    static final Duration UNKNOWN_LIFETIME = Duration.ofHours(1);
    /** How long a still-valid token is used after a failed refresh before the next attempt. */
    static final Duration RETRY_AFTER_FAILED_REFRESH = Duration.ofSeconds(5);

    private static final Logger log = LoggerFactory.getLogger(ClientCredentialsTokenSource.class);
    private static final String MASK = "****";

    private final String clientId;
    private final String clientSecret;
    private final Optional<String> environment;
    private final Channel channel;
    private final ManagedChannel ownedChannel;
    private final String server;
    private final Clock clock;
    private final Duration refreshBefore;
    private final Duration timeout;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile Cached cached;
    private volatile boolean closed;

    private record Cached(AccessToken token, Instant refreshAt, Instant expiresAt) {}

    private ClientCredentialsTokenSource(Builder b) {
        this.clientId = b.clientId;
        this.clientSecret = b.clientSecret;
        this.environment = Optional.ofNullable(b.environment);
        this.clock = b.clock;
        this.refreshBefore = b.refreshBefore;
        this.timeout = b.timeout;
        if (b.channel != null) {
            this.channel = b.channel;
            this.ownedChannel = null;
            this.server = b.channel.authority();
        } else {
            ConnectionSettings settings = ConnectionSettings.forTarget(b.apiServer);
            if (!settings.useTls() && !ChalkAuthInterceptor.isLoopback(settings.target())) {
                // the secret does not expire as a token does: whoever reads it on the way signs in as this client
                log.warn(
                        "exchanging the client secret of '{}' with {} without TLS; use an https:// address for"
                                + " remote servers",
                        clientId,
                        settings.target());
            }
            ManagedChannel opened = settings.openChannel();
            this.channel = opened;
            this.ownedChannel = opened;
            this.server = b.apiServer;
        }
    }

    /**
     * Starts configuring a source.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public AccessToken token() {
        Cached current = cached;
        if (current != null && clock.instant().isBefore(current.refreshAt())) {
            return current.token();
        }
        lock.lock();
        try {
            current = cached;
            Instant now = clock.instant();
            if (current != null && now.isBefore(current.refreshAt())) {
                return current.token();
            }
            if (closed) {
                throw new ChalkComputeException(
                        Status.Code.CANCELLED, "the token source for client id '" + clientId + "' is closed");
            }
            try {
                cached = exchange(now);
            } catch (ChalkComputeException e) {
                if (current != null && now.isBefore(current.expiresAt())) {
                    log.warn(
                            "refreshing the token for client id '{}' at {} failed ({}); using the current one until "
                                    + "it expires at {}",
                            clientId,
                            server,
                            e.getMessage(),
                            current.expiresAt());
                    Instant retryAt = now.plus(RETRY_AFTER_FAILED_REFRESH);
                    cached = new Cached(
                            current.token(),
                            retryAt.isBefore(current.expiresAt()) ? retryAt : current.expiresAt(),
                            current.expiresAt());
                    return current.token();
                }
                throw e;
            }
            return cached.token();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void invalidate(AccessToken rejected) {
        lock.lock();
        try {
            Cached current = cached;
            if (current != null && current.token().equals(rejected)) {
                log.debug(
                        "a server rejected the token for client id '{}'; exchanging again on the next call", clientId);
                cached = null;
            }
        } finally {
            lock.unlock();
        }
    }

    private Cached exchange(Instant now) {
        GetTokenRequest request = GetTokenRequest.newBuilder()
                .setClientId(clientId)
                .setClientSecret(clientSecret)
                .setGrantType(GRANT_TYPE)
                .build();
        GetTokenResponse response;
        try {
            response = AuthServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                    .getToken(request);
        } catch (StatusRuntimeException e) {
            throw failure(e);
        }
        if (response.getAccessToken().isBlank()) {
            throw new AuthenticationException(
                    Status.Code.UNAUTHENTICATED,
                    "the API server " + server + " returned no access token for client id '" + clientId + "'",
                    null);
        }
        Instant expiresAt;
        if (response.hasExpiresAt()
                && (response.getExpiresAt().getSeconds() != 0
                        || response.getExpiresAt().getNanos() != 0)) {
            expiresAt = Instant.ofEpochSecond(
                    response.getExpiresAt().getSeconds(),
                    response.getExpiresAt().getNanos());
        } else if (response.getExpiresIn() > 0) {
            expiresAt = now.plusSeconds(response.getExpiresIn());
        } else {
            expiresAt = now.plus(UNKNOWN_LIFETIME);
        }
        Duration lifetime = Duration.between(now, expiresAt);
        Duration margin = lifetime.isNegative()
                ? Duration.ZERO
                : refreshBefore.compareTo(lifetime.dividedBy(2)) < 0 ? refreshBefore : lifetime.dividedBy(2);
        Optional<String> env = environment.or(() -> response.hasPrimaryEnvironment()
                        && !response.getPrimaryEnvironment().isBlank()
                ? Optional.of(response.getPrimaryEnvironment())
                : Optional.empty());
        AccessToken token = new AccessToken(response.getAccessToken(), env, Optional.of(expiresAt));
        log.debug(
                "exchanged client credentials for client id '{}' at {}: token expires at {}, environment {}",
                clientId,
                server,
                expiresAt,
                env.orElse("<server default>"));
        return new Cached(token, expiresAt.minus(margin), expiresAt);
    }

    private ChalkComputeException failure(StatusRuntimeException e) {
        Status status = e.getStatus();
        String description = status.getDescription() == null ? "" : status.getDescription();
        boolean echoed = description.contains(clientSecret);
        String serverMessage = echoed ? description.replace(clientSecret, MASK) : description;
        String message = "cannot exchange the client credentials of client id '" + clientId + "' for a token at "
                + server + (serverMessage.isBlank() ? "" : ": " + serverMessage);
        if (status.getCode() == Status.Code.UNIMPLEMENTED) {
            message += " (the server does not implement chalk.server.v1.AuthService: check "
                    + ChalkCredentials.ENV_API_SERVER + ")";
        }
        Throwable cause = echoed ? null : e;
        return switch (status.getCode()) {
            case UNAUTHENTICATED, PERMISSION_DENIED -> new AuthenticationException(status.getCode(), message, cause);
            case NOT_FOUND -> new ChalkComputeException(Status.Code.NOT_FOUND, message, cause);
            default -> ChalkComputeException.of(status.getCode(), message, cause);
        };
    }

    /** Shuts down the connection to the API server if this source opened it. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (ownedChannel != null) {
            ownedChannel.shutdown();
            try {
                if (!ownedChannel.awaitTermination(5, TimeUnit.SECONDS)) {
                    ownedChannel.shutdownNow();
                }
            } catch (InterruptedException e) {
                ownedChannel.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Shows the client id, server and environment; never the secret or token. */
    @Override
    public String toString() {
        return "ClientCredentialsTokenSource[clientId=" + clientId + ", clientSecret=" + MASK + ", server=" + server
                + environment.map(e -> ", environment=" + e).orElse("") + (closed ? ", closed" : "") + "]";
    }

    /** Configures a {@link ClientCredentialsTokenSource}. Not thread-safe. */
    public static final class Builder {
        private String clientId;
        private String clientSecret;
        private String apiServer;
        private Channel channel;
        private String environment;
        private Clock clock = Clock.systemUTC();
        private Duration refreshBefore = DEFAULT_REFRESH_BEFORE;
        private Duration timeout = DEFAULT_TIMEOUT;

        private Builder() {}

        /**
         * The client id.
         *
         * @param clientId the client id
         * @return this builder
         */
        public Builder clientId(String clientId) {
            this.clientId = Objects.requireNonNull(clientId, "clientId");
            return this;
        }

        /**
         * The client secret.
         *
         * @param clientSecret the client secret
         * @return this builder
         */
        public Builder clientSecret(String clientSecret) {
            this.clientSecret = Objects.requireNonNull(clientSecret, "clientSecret");
            return this;
        }

        /**
         * The API server to exchange at, as a URL ({@code https://api.chalk.ai}) or {@code host:port}
         * (plaintext); the source opens its own connection and closes it on {@link #close()}.
         *
         * @param apiServer the server
         * @return this builder
         */
        public Builder apiServer(String apiServer) {
            this.apiServer = Objects.requireNonNull(apiServer, "apiServer");
            return this;
        }

        /**
         * A channel to the API server that you manage, instead of {@link #apiServer(String)}; it is not closed by
         * the source. It must not carry a {@link ChalkAuthInterceptor} for this source.
         *
         * @param channel the channel
         * @return this builder
         */
        public Builder channel(Channel channel) {
            this.channel = Objects.requireNonNull(channel, "channel");
            return this;
        }

        /**
         * The environment to act in, overriding the {@code primary_environment} the server names.
         *
         * @param environment an environment id or name, or {@code null} for the server's choice
         * @return this builder
         */
        public Builder environment(String environment) {
            this.environment = environment == null || environment.isBlank() ? null : environment.trim();
            return this;
        }

        /**
         * The clock deciding when a token needs refreshing (tests use a fixed or adjustable one).
         *
         * @param clock the clock
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * How long before expiry to refresh; at most half the token's lifetime is used. Default one minute.
         *
         * @param refreshBefore the margin
         * @return this builder
         */
        public Builder refreshBefore(Duration refreshBefore) {
            if (Objects.requireNonNull(refreshBefore, "refreshBefore").isNegative()) {
                throw new IllegalArgumentException("refreshBefore must not be negative");
            }
            this.refreshBefore = refreshBefore;
            return this;
        }

        /**
         * How long one exchange may take. Default 30 seconds.
         *
         * @param timeout the deadline of each {@code GetToken} call
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            if (Objects.requireNonNull(timeout, "timeout").isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout must be positive");
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * Builds the source; nothing is exchanged until the first {@link TokenSource#token()}.
         *
         * @return the source
         * @throws IllegalStateException when the client id, secret or server is missing, or both a server and a
         *                               channel are set
         */
        public ClientCredentialsTokenSource build() {
            if (clientId == null || clientId.isBlank()) {
                throw new IllegalStateException("no client id set");
            }
            if (clientSecret == null || clientSecret.isBlank()) {
                throw new IllegalStateException("no client secret set");
            }
            if (channel == null && apiServer == null) {
                throw new IllegalStateException("set apiServer(url) or channel(channel)");
            }
            if (channel != null && apiServer != null) {
                throw new IllegalStateException("set either apiServer(url) or channel(channel), not both");
            }
            return new ClientCredentialsTokenSource(this);
        }

        @Override
        public String toString() {
            return "ClientCredentialsTokenSource.Builder[clientId=" + clientId + ", clientSecret="
                    + (clientSecret == null ? "null" : MASK) + ", apiServer=" + apiServer + "]";
        }
    }
}
