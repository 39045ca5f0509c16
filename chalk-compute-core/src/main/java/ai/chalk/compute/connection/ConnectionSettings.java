package ai.chalk.compute.connection;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.FailedPreconditionException;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Where and how to connect to a Chalk Compute server.
 *
 * <p>Usually built for you by a client's builder or {@code fromEnv()}; use it directly to share
 * one configuration between several clients:
 * <pre>{@code
 * ConnectionSettings settings = ConnectionSettings.forTarget("https://compute.example.com")
 *         .withBearerToken(token);
 * ManagedChannel channel = settings.openChannel();
 * }</pre>
 *
 * @param target            the gRPC target, {@code host:port} (or any target gRPC understands)
 * @param useTls            whether to connect with TLS
 * @param trustCertificates a PEM file of certificates to trust instead of the system's, if any
 * @param bearerToken       a token sent as {@code authorization: Bearer <token>} on every call, if any
 */
public record ConnectionSettings(
        String target, boolean useTls, Optional<Path> trustCertificates, Optional<String> bearerToken) {

    /** The environment variable naming the compute server's address ({@code host:port} or a URL). */
    public static final String ENV_TARGET = "CHALK_COMPUTE_TARGET";
    /** The SDK's environment variable naming Chalk's API server, a URL; {@code https} means TLS. */
    public static final String ENV_API_SERVER = "CHALK_API_SERVER";
    /** Bytes a server may send on one call (and on the connection) before the client has read them. */
    private static final int FLOW_CONTROL_WINDOW = 8 << 20;

    /** Validates the settings. */
    public ConnectionSettings {
        Objects.requireNonNull(target, "target");
        if (target.isBlank()) {
            throw new IllegalArgumentException("target must not be blank");
        }
        Objects.requireNonNull(trustCertificates, "trustCertificates");
        Objects.requireNonNull(bearerToken, "bearerToken");
    }

    /**
     * Settings for a target given as {@code host:port} (plaintext) or as a URL:
     * {@code https://host[:port]} connects with TLS (port 443 by default),
     * {@code http://host[:port]} without (port 80 by default).
     *
     * @param target the server's address
     * @return settings without credentials
     */
    public static ConnectionSettings forTarget(String target) {
        Objects.requireNonNull(target, "target");
        String t = target.trim();
        String lower = t.toLowerCase(Locale.ROOT);
        if (lower.startsWith("https://") || lower.startsWith("http://")) {
            boolean tls = lower.startsWith("https://");
            URI uri;
            try {
                uri = new URI(t);
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException("not a valid server URL: " + target, e);
            }
            if (uri.getHost() == null) {
                throw new IllegalArgumentException("server URL has no host: " + target);
            }
            int port = uri.getPort() != -1 ? uri.getPort() : tls ? 443 : 80;
            String host = uri.getHost().contains(":") && !uri.getHost().startsWith("[")
                    ? "[" + uri.getHost() + "]"
                    : uri.getHost();
            return new ConnectionSettings(host + ":" + port, tls, Optional.empty(), Optional.empty());
        }
        return new ConnectionSettings(t, false, Optional.empty(), Optional.empty());
    }

    /**
     * Settings from the process environment; see {@link #fromEnv(Map)}.
     *
     * @return the settings
     * @throws ChalkComputeException when no server address is configured
     */
    public static ConnectionSettings fromEnv() {
        return fromEnv(System.getenv());
    }

    /**
     * Settings from environment variables: {@value #ENV_TARGET} ({@code host:port} or a URL) if
     * set, else {@value #ENV_API_SERVER} (a URL; {@code https} means TLS).
     *
     * @param env the environment variables to read
     * @return the settings
     * @throws FailedPreconditionException (a {@link ChalkComputeException}) when neither variable is set
     */
    public static ConnectionSettings fromEnv(Map<String, String> env) {
        String target = env.get(ENV_TARGET);
        if (target != null && !target.isBlank()) {
            return forTarget(target);
        }
        String apiServer = env.get(ENV_API_SERVER);
        if (apiServer != null && !apiServer.isBlank()) {
            String s = apiServer.trim();
            if (!s.contains("://")) {
                throw new IllegalArgumentException(
                        ENV_API_SERVER + " must be a URL such as https://api.chalk.ai, got: " + apiServer);
            }
            return forTarget(s);
        }
        throw new FailedPreconditionException(
                "no Chalk Compute server configured: set " + ENV_TARGET + " (host:port or URL, e.g. localhost:50051)"
                        + " or " + ENV_API_SERVER + " (URL, e.g. https://api.chalk.ai)");
    }

    /**
     * These settings with TLS switched on or off.
     *
     * @param tls whether to use TLS
     * @return new settings
     */
    public ConnectionSettings withTls(boolean tls) {
        return new ConnectionSettings(target, tls, trustCertificates, bearerToken);
    }

    /**
     * These settings trusting the certificates in a PEM file (implies TLS).
     *
     * @param pem a PEM file with one or more CA or server certificates
     * @return new settings
     */
    public ConnectionSettings withTrustCertificates(Path pem) {
        return new ConnectionSettings(target, true, Optional.of(pem), bearerToken);
    }

    /**
     * These settings sending a bearer token with every call.
     *
     * @param token the token
     * @return new settings
     */
    public ConnectionSettings withBearerToken(String token) {
        Objects.requireNonNull(token, "token");
        return new ConnectionSettings(target, useTls, trustCertificates, Optional.of(token));
    }

    /**
     * Opens a channel with these settings. The caller owns it and must shut it down.
     *
     * @return a new channel; it connects lazily on the first call; a call that cannot reach the server fails with a
     *     message naming the target and the cause ({@link ConnectionFailures})
     * @throws UncheckedIOException when the trusted certificates cannot be read
     */
    public ManagedChannel openChannel() {
        var builder = Grpc.newChannelBuilder(target, credentials());
        if (builder instanceof NettyChannelBuilder netty) {
            // exec output comes in 256 KiB messages: with gRPC's 1 MiB window a fast stream stops every few messages
            // for a window update; the window still grows past this where gRPC measures a larger bandwidth-delay
            // product, and what a call holds stays bounded by it and the messages the SDK asks for ahead
            netty.initialFlowControlWindow(FLOW_CONTROL_WINDOW);
            if (target.startsWith("unix:")) {
                // gRPC asks for TCP keep-alive on every connection, which a unix socket has not: Netty would warn
                // about it each time
                netty.withOption(ChannelOption.SO_KEEPALIVE, null);
            }
        }
        bearerToken.ifPresent(token -> builder.intercept(new BearerToken(token)));
        builder.intercept(new ConnectionFailures(target)); // "connection refused to host:port", not "io exception"
        return builder.build();
    }

    private ChannelCredentials credentials() {
        if (!useTls) {
            return InsecureChannelCredentials.create();
        }
        TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
        if (trustCertificates.isPresent()) {
            try {
                tls.trustManager(trustCertificates.get().toFile());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read trusted certificates from " + trustCertificates.get(), e);
            }
        }
        return tls.build();
    }

    /** Shows the settings with the token redacted. */
    @Override
    public String toString() {
        return "ConnectionSettings[target=" + target + ", useTls=" + useTls
                + trustCertificates.map(p -> ", trustCertificates=" + p).orElse("")
                + (bearerToken.isPresent() ? ", bearerToken=<redacted>" : "") + "]";
    }

    /** Adds {@code authorization: Bearer <token>} to every call. */
    private static final class BearerToken implements ClientInterceptor {
        private static final Metadata.Key<String> AUTHORIZATION =
                Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
        private final String header;

        BearerToken(String token) {
            this.header = "Bearer " + token;
        }

        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
            return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                @Override
                public void start(Listener<R> listener, Metadata headers) {
                    headers.put(AUTHORIZATION, header);
                    super.start(listener, headers);
                }
            };
        }
    }
}
