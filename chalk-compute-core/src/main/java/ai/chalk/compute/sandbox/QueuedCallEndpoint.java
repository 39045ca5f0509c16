package ai.chalk.compute.sandbox;

import ai.chalk.compute.auth.AccessToken;
import ai.chalk.compute.auth.ChalkAuthInterceptor;
import ai.chalk.compute.auth.TokenSource;
import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.proto.server.v1.GetEnvRequest;
import ai.chalk.compute.proto.server.v1.TeamServiceGrpc;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where queued function calls go, following Chalk's SDK: the engine {@value #ENV_GRPC_ENGINE} names when it is set;
 * otherwise the {@code grpc_engine_url} of the environment as {@code TeamService.GetEnv} describes it, asked once and
 * asked again only when the identity's token changes (a refreshed identity may act in another environment). A server
 * that describes no engine, or has no metadata API, takes queued calls itself.
 */
final class QueuedCallEndpoint implements AutoCloseable {

    /** The environment variable naming the engine that takes queued function calls. */
    static final String ENV_GRPC_ENGINE = "CHALK_GRPC_ENGINE";

    private static final Logger log = LoggerFactory.getLogger(QueuedCallEndpoint.class);

    private final Channel server;
    private final String serverTarget;
    private final TokenSource tokens; // null: no identity, so nothing to discover with
    private final String configured; // null: discover
    private final boolean serverTls;
    private Discovered discovered; // guarded by this

    /** What discovery found, for the token it was found with; {@code channel == null} means the server's own. */
    private record Discovered(AccessToken token, String target, ManagedChannel channel) {}

    private QueuedCallEndpoint(
            Channel server, String serverTarget, TokenSource tokens, String configured, boolean serverTls) {
        this.serverTls = serverTls;
        this.server = server;
        this.serverTarget = serverTarget;
        this.tokens = tokens;
        this.configured = configured;
    }

    /** Queued calls over the server's own channel: an embedded server, or a channel the user manages. */
    static QueuedCallEndpoint server(Channel server, String target) {
        return new QueuedCallEndpoint(server, target, null, null, false);
    }

    /**
     * Queued calls for a client configured from {@code env}: to {@value #ENV_GRPC_ENGINE} when set, else discovered
     * with {@code tokens} (when there is an identity), else to the server.
     */
    static QueuedCallEndpoint fromEnv(
            Map<String, String> env, Channel server, ConnectionSettings settings, TokenSource tokens) {
        String engine = env.get(ENV_GRPC_ENGINE);
        return new QueuedCallEndpoint(
                server,
                settings.target(),
                tokens,
                engine == null || engine.isBlank() ? null : engine.strip(),
                settings.useTls());
    }

    /** The channel the next queued call goes over. */
    synchronized Channel channel() {
        Discovered current = resolve();
        if (current.channel() == null) {
            return server;
        }
        return tokens == null
                ? current.channel()
                : ClientInterceptors.intercept(current.channel(), new ChalkAuthInterceptor(tokens));
    }

    /** The address the next queued call goes to. */
    synchronized String target() {
        return resolve().target();
    }

    private Discovered resolve() {
        if (configured != null) {
            if (discovered == null) {
                discovered = open(null, ConnectionSettings.forTarget(configured));
            }
            return discovered;
        }
        if (tokens == null) {
            return discovered == null ? discovered = new Discovered(null, serverTarget, null) : discovered;
        }
        AccessToken token = tokens.token();
        if (discovered != null && token.equals(discovered.token())) {
            return discovered;
        }
        String engine = engineUrl();
        Discovered previous = discovered;
        discovered = engine.isEmpty() || sameAddress(engine)
                ? new Discovered(token, serverTarget, null)
                : open(token, discoveredEngine(engine, serverTls));
        if (previous != null && previous.channel() != null) {
            previous.channel().shutdown();
        }
        log.debug("Queued function calls go to {}", discovered.target());
        return discovered;
    }

    private String engineUrl() {
        try {
            return TeamServiceGrpc.newBlockingStub(server)
                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                    .getEnv(GetEnvRequest.getDefaultInstance())
                    .getEnvironment()
                    .getGrpcEngineUrl();
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == Status.Code.UNIMPLEMENTED) {
                return ""; // a server without the metadata API takes queued calls itself
            }
            if (e.getStatus().getCode() == Status.Code.PERMISSION_DENIED) {
                throw new FailedPreconditionException("this identity may not read its environment's metadata to find"
                        + " where queued function calls go: set " + ENV_GRPC_ENGINE + " to the engine's address");
            }
            throw ChalkComputeException.from(e);
        }
    }

    private boolean sameAddress(String engine) {
        return ConnectionSettings.forTarget(engine).target().equals(serverTarget);
    }

    /**
     * The settings for an engine the server described. The client's token goes there, so an engine described over TLS
     * is reached over TLS too: {@code host:port} inherits it, and an {@code http://} URL is refused rather than sending
     * the token in the clear because the metadata API said so.
     */
    static ConnectionSettings discoveredEngine(String engine, boolean serverTls) {
        ConnectionSettings settings = ConnectionSettings.forTarget(engine);
        if (!serverTls || settings.useTls()) {
            return settings;
        }
        if (engine.strip().toLowerCase(java.util.Locale.ROOT).startsWith("http://")) {
            throw new FailedPreconditionException("the server, reached over TLS, names a plaintext engine for queued"
                    + " function calls (" + engine + "); the token is not sent there: set " + ENV_GRPC_ENGINE
                    + " to the engine's address");
        }
        return settings.withTls(true);
    }

    private static Discovered open(AccessToken token, ConnectionSettings settings) {
        return new Discovered(token, settings.target(), settings.openChannel());
    }

    @Override
    public synchronized void close() {
        if (discovered != null && discovered.channel() != null) {
            ManagedChannel channel = discovered.channel();
            channel.shutdown();
            try {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                channel.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
    }
}
