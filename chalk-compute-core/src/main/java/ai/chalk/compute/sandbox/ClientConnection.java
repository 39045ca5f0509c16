package ai.chalk.compute.sandbox;

import ai.chalk.compute.auth.ChalkAuthInterceptor;
import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.auth.CredentialSource;
import ai.chalk.compute.auth.TokenSource;
import ai.chalk.compute.connection.ConnectionFailures;
import ai.chalk.compute.connection.ConnectionSettings;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.time.Duration;
import java.util.Map;
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

    private ClientConnection(
            Channel channel, ManagedChannel ownedChannel, TokenSource ownedTokens, String description) {
        this.channel = channel;
        this.ownedChannel = ownedChannel;
        this.ownedTokens = ownedTokens;
        this.description = description;
    }

    /** A channel to a server embedded in this JVM. */
    static ClientConnection inProcess(String serverName) {
        ManagedChannel channel = InProcessChannelBuilder.forName(serverName).build();
        String target = "in-process:" + serverName;
        return new ClientConnection(ConnectionFailures.intercept(channel, target), channel, null, target);
    }

    /**
     * Opens a channel for {@code settings}, authenticating calls with {@code tokens} when given.
     *
     * @param owned {@code tokens} when the connection made them and closes them, else {@code null}
     */
    static ClientConnection open(ConnectionSettings settings, TokenSource tokens, TokenSource owned) {
        ManagedChannel raw = settings.openChannel();
        Channel calls = tokens == null ? raw : ClientInterceptors.intercept(raw, new ChalkAuthInterceptor(tokens));
        return new ClientConnection(calls, raw, owned, settings.target());
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
        return open(settings, tokens, tokens);
    }

    private static boolean isSet(String value) {
        return value != null && !value.isBlank();
    }

    /** A channel the user manages: closing the connection leaves it open. */
    static ClientConnection of(Channel channel) {
        // a failed call names where it went, whoever made the channel
        return new ClientConnection(
                ConnectionFailures.intercept(channel, channel.authority()), null, null, channel.authority());
    }

    Channel channel() {
        return channel;
    }

    /**
     * Closes what this connection owns, waiting briefly for calls in flight before cancelling them: a channel shut
     * down without waiting would cut off a command's last output.
     */
    void close() {
        if (ownedTokens != null) {
            ownedTokens.close();
        }
        if (ownedChannel == null) {
            return;
        }
        ownedChannel.shutdown();
        try {
            if (!ownedChannel.awaitTermination(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                ownedChannel.shutdownNow();
                ownedChannel.awaitTermination(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            ownedChannel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return description;
    }
}
