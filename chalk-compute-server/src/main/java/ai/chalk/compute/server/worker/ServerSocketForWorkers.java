package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.grpc.MalformedRequests;
import ai.chalk.compute.server.grpc.OpenConnections;
import ai.chalk.compute.server.threads.DaemonThreads;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's own services on a Unix socket that every replica sees at {@link WorkerLaunch#SERVER_SOCKET}, so a
 * function can create sandboxes, call other functions or read volumes through the server that runs it. A socket
 * reaches into a replica whatever its network (a local sandbox has only loopback, a container may have none), and it
 * is reachable from nowhere else: its directory is private to the server's data directory. What deployed code may do
 * through it is limited by {@link WorkerScope}.
 */
public final class ServerSocketForWorkers implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ServerSocketForWorkers.class);
    /** sun_path holds 108 bytes with its terminating NUL. */
    private static final int MAX_SOCKET_PATH_BYTES = 107;

    /**
     * Connections open at once: under the file descriptors a server is usually given, beside its TCP port's
     * {@link OpenConnections#DEFAULT_LIMIT}.
     */
    static final int MAX_CONNECTIONS = 4_096;

    /**
     * Connections one peer (a sandbox or a replica: a pid namespace) keeps open: an honest one opens a channel or a
     * few. One environment runs at most half of the server's sandboxes (128 by default), so its peers together hold at
     * most half of {@link #MAX_CONNECTIONS}.
     */
    static final int MAX_CONNECTIONS_PER_PEER = 16;

    private final Path dir;
    /** What deployed code may do through the socket. */
    private final WorkerScope scope = new WorkerScope();

    private final Optional<String> unusable;
    private final OpenConnections connections;
    private Server server;
    private EventLoopGroup boss;
    private EventLoopGroup workers;

    /**
     * @param dir the directory holding the socket; it is bound read-only into replicas (from the start, so replicas
     *            started before the socket serves see it appear)
     */
    public ServerSocketForWorkers(Path dir) throws IOException {
        this(dir, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_PEER);
    }

    /** @param maxConnections connections open at once, and {@code perPeer} of them from one peer */
    ServerSocketForWorkers(Path dir, int maxConnections, int perPeer) throws IOException {
        this.connections = new OpenConnections(maxConnections, perPeer);
        this.dir = dir.toAbsolutePath().normalize();
        Files.createDirectories(this.dir);
        Path socket = this.dir.resolve(WorkerLaunch.SERVER_SOCKET_NAME);
        if (!Epoll.isAvailable()) {
            unusable = Optional.of("Unix sockets need epoll here (" + Epoll.unavailabilityCause() + ")");
        } else if (socket.toString().getBytes(StandardCharsets.UTF_8).length > MAX_SOCKET_PATH_BYTES) {
            unusable = Optional.of("the socket path " + socket + " is longer than " + MAX_SOCKET_PATH_BYTES
                    + " bytes; choose a shorter data directory");
        } else {
            unusable = Optional.empty();
        }
    }

    /** The directory to bind into replicas, unless the socket cannot serve here. */
    public Optional<Path> dir() {
        return unusable.isPresent() ? Optional.empty() : Optional.of(dir);
    }

    /**
     * Starts serving the given services. When Unix sockets cannot be served here (no epoll, a path too long), logs a
     * WARN and leaves replicas without a connection to the server; functions still serve calls.
     *
     * @param services the same services clients get on the other transports, not yet guarded against malformed
     *                 requests
     * @param maxInboundMessageBytes the server's message size limit
     */
    public void start(
            List<ServerServiceDefinition> services, int maxInboundMessageBytes, ServerStreamTracer.Factory received)
            throws IOException {
        if (unusable.isPresent()) {
            log.warn("functions cannot reach this server from their replicas: {}", unusable.get());
            return;
        }
        Path socket = dir.resolve(WorkerLaunch.SERVER_SOCKET_NAME);
        Files.deleteIfExists(socket); // left by a server that was killed
        boss = new EpollEventLoopGroup(1, DaemonThreads.named("chalk-compute-worker-socket-accept"));
        workers = new EpollEventLoopGroup(2, DaemonThreads.named("chalk-compute-worker-socket"));
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                // gRPC asks every accepted channel for TCP keep-alive, which a unix socket has not: Netty would warn
                // about it for each connection
                .withChildOption(ChannelOption.SO_KEEPALIVE, null)
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers)
                .maxInboundMessageSize(maxInboundMessageBytes)
                .decompressorRegistry(ComputeServer.NO_DECOMPRESSION)
                .addStreamTracerFactory(received);
        // every workload of every environment reaches this socket: one opening connections in a loop ran the server
        // out of file descriptors, as a peer of its TCP port could before it had its count
        connections.applyToUnixSocket(builder);
        // deployed code gets a function's rights, not the server's; the scope looks at parsed requests, so it goes
        // inside the guard against malformed ones
        services.forEach(s -> builder.addService(MalformedRequests.guard(ServerInterceptors.intercept(s, scope))));
        try {
            server = builder.build().start();
            // a worker image may run as a non-root user; the directory, inside the server's private data
            // directory, is what keeps everyone else on the host out
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
            Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-rw-rw-"));
        } catch (IOException | RuntimeException e) {
            if (server != null) {
                server.shutdownNow();
                server = null;
            }
            shutdownGroups();
            throw e;
        }
    }

    /** The connections open now. */
    OpenConnections connections() {
        return connections;
    }

    /** The sandbox {@code id} ended: deployed code that made it is answered for it a while longer, then forgotten. */
    public void sandboxEnded(String id) {
        scope.sandboxEnded(id);
    }

    /** Begins an orderly shutdown. */
    public void shutdown() {
        if (server != null) {
            server.shutdown();
        }
    }

    @Override
    public void close() {
        if (server != null) {
            try {
                if (!server.awaitTermination(2, TimeUnit.SECONDS)) {
                    server.shutdownNow();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                server.shutdownNow();
            }
        }
        shutdownGroups();
        try {
            Files.deleteIfExists(dir.resolve(WorkerLaunch.SERVER_SOCKET_NAME));
        } catch (IOException ignored) {
            // the next start removes it
        }
    }

    private void shutdownGroups() {
        if (boss != null) {
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        if (workers != null) {
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }
}
