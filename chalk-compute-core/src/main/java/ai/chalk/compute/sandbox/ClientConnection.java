package ai.chalk.compute.sandbox;

import ai.chalk.compute.auth.ChalkAuthInterceptor;
import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.auth.CredentialSource;
import ai.chalk.compute.auth.TokenSource;
import ai.chalk.compute.connection.ConnectionFailures;
import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.tracing.ClientTracing;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The connection a {@link SandboxClient} calls the server over, and what the client must close with it: the channel
 * it opened (never one the user gave it) and the token source it made from credentials (never one the user gave it).
 */
final class ClientConnection {

    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

    private final Channel channel;
    private final ManagedChannel ownedChannel; // null: the user manages the channel
    private final TokenSource ownedTokens; // null: no tokens, or the user manages their source
    private final String description;
    private final QueuedCallEndpoint queuedCalls;
    private final boolean ownsQueuedCalls;
    private ClientTracing tracing = ClientTracing.NONE; // owned: closed with the connection
    private Optional<Path> trustCertificates = Optional.empty();

    private ClientConnection(
            Channel channel,
            ManagedChannel ownedChannel,
            TokenSource ownedTokens,
            String description,
            QueuedCallEndpoint queuedCalls,
            boolean ownsQueuedCalls) {
        this.channel = channel;
        this.ownedChannel = ownedChannel;
        this.ownedTokens = ownedTokens;
        this.description = description;
        this.queuedCalls = queuedCalls;
        this.ownsQueuedCalls = ownsQueuedCalls;
    }

    /** A channel to a server embedded in this JVM. */
    static ClientConnection inProcess(String serverName) {
        ManagedChannel channel = InProcessChannelBuilder.forName(serverName).build();
        String description = "in-process:" + serverName;
        Channel calls = ConnectionFailures.intercept(channel, description);
        return new ClientConnection(
                calls, channel, null, description, QueuedCallEndpoint.server(calls, description), true);
    }

    /**
     * Opens a channel for {@code settings}, authenticating calls with {@code tokens} when given; queued function calls
     * go where {@code env} says ({@link QueuedCallEndpoint}).
     *
     * @param owned {@code tokens} when the connection made them and closes them, else {@code null}
     */
    static ClientConnection open(
            ConnectionSettings settings, TokenSource tokens, TokenSource owned, Map<String, String> env) {
        // OTEL_EXPORTER_OTLP_* ask for a span per call (read first: a malformed variable fails before a channel opens)
        ClientTracing tracing = ClientTracing.fromEnv(env);
        ManagedChannel raw = settings.openChannel();
        Channel authenticated =
                tokens == null ? raw : ClientInterceptors.intercept(raw, new ChalkAuthInterceptor(tokens));
        Channel calls = tracing.intercept(authenticated);
        QueuedCallEndpoint queued = QueuedCallEndpoint.fromEnv(env, calls, settings, tokens);
        ClientConnection connection = new ClientConnection(calls, raw, owned, settings.target(), queued, true);
        connection.trustCertificates = settings.trustCertificates();
        connection.tracing = tracing;
        return connection;
    }

    /** Opens the connection {@link SandboxClient#fromEnv(Map)} describes. */
    static ClientConnection fromEnv(Map<String, String> env) {
        ChalkCredentials credentials =
                ChalkCredentials.builder().environmentVariables(env).resolve();
        boolean ownTarget = isSet(env.get(ConnectionSettings.ENV_TARGET));
        ConnectionSettings settings = !ownTarget
                        && !isSet(env.get(ConnectionSettings.ENV_API_SERVER))
                        && credentials.apiServer().isPresent()
                ? ConnectionSettings.forTarget(credentials.apiServer().get())
                : ConnectionSettings.fromEnv(env);
        // a chalk login is for Chalk's API server: its token is not sent to a server of the user's own choosing
        boolean authenticate =
                credentials.hasIdentity() && !(ownTarget && credentials.source() == CredentialSource.CHALK_YML);
        // client credentials for a target of the user's own, with no API server named, are that server's to exchange
        if (ownTarget
                && credentials.apiServer().isEmpty()
                && credentials.clientId().isPresent()
                && credentials.clientSecret().isPresent()) {
            credentials = credentials.withApiServer(
                    env.get(ConnectionSettings.ENV_TARGET).strip());
        }
        TokenSource tokens = authenticate ? TokenSource.from(credentials) : null;
        return open(settings, tokens, tokens, env);
    }

    private static boolean isSet(String value) {
        return value != null && !value.isBlank();
    }

    /** A channel the user manages: closing the connection leaves it open. Queued calls go over it too. */
    static ClientConnection of(Channel channel) {
        return of(channel, Optional.empty());
    }

    /** As {@link #of(Channel)}, for a channel that trusts {@code trustCertificates} (see {@link #trustCertificates}). */
    static ClientConnection of(Channel channel, Optional<Path> trustCertificates) {
        // a failed call names where it went, whoever made the channel
        Channel calls = ConnectionFailures.intercept(channel, channel.authority());
        ClientConnection connection = new ClientConnection(
                calls, null, null, channel.authority(), QueuedCallEndpoint.server(calls, channel.authority()), true);
        connection.trustCertificates = trustCertificates;
        return connection;
    }

    /** Another user of {@code other}'s channel and queued-call endpoint, closing neither. */
    static ClientConnection sharing(ClientConnection other) {
        ClientConnection sharing =
                new ClientConnection(other.channel, null, null, other.description, other.queuedCalls, false);
        sharing.trustCertificates = other.trustCertificates;
        return sharing;
    }

    Channel channel() {
        return channel;
    }

    /** The certificates the connection trusts (instead of the system's), if it was given some. */
    Optional<Path> trustCertificates() {
        return trustCertificates;
    }

    QueuedCallEndpoint queuedCalls() {
        return queuedCalls;
    }

    /**
     * Closes what this connection owns, waiting briefly for calls in flight before cancelling them: a channel shut
     * down without waiting would cut off a command's last output.
     */
    void close() {
        if (ownsQueuedCalls) {
            queuedCalls.close();
        }
        if (ownedTokens != null) {
            ownedTokens.close();
        }
        try {
            if (ownedChannel != null) {
                shutDown(ownedChannel);
            }
        } finally {
            tracing.close(); // after the last calls ended: exports their spans
        }
    }

    private static void shutDown(ManagedChannel channel) {
        channel.shutdown();
        try {
            if (!channel.awaitTermination(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                channel.shutdownNow();
                channel.awaitTermination(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            channel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return description;
    }
}
