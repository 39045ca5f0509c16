package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.threads.DaemonThreads;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The TCP connections the server keeps open at once, and from one address: each holds a file descriptor and buffers of
 * the server's before it has made a single call, and grpc-java takes as many as it is given, so that a peer without
 * credentials opening connections in a loop ran the server out of descriptors (a sandbox's exec, an upload, the next
 * client then failed). A connection past the limit, or past its address's share, is closed as soon as it is accepted,
 * before anything is read from it (a gRPC client says UNAVAILABLE and tries again later); one that sends nothing within
 * {@link #FIRST_BYTES_DEADLINE} of its opening is closed too, so that a silent connection holds its place for seconds,
 * not the 120 s of grpc-java's handshake timeout. A connection that has spoken may stay idle: an honest client's does.
 * An address is as {@link PeerAddress} keys it (an IPv6 one by its /64). The same count guards the Unix socket deployed
 * code reaches the server on ({@link #applyToUnixSocket}), where a peer is the user namespace it runs in.
 */
public final class OpenConnections {

    /** The default server-wide limit: well under the descriptors a server is usually given (this VM: 20,000). */
    public static final int DEFAULT_LIMIT = 8_192;

    /**
     * The default share of one address: an application makes one connection per channel, and a host behind a NAT a
     * few dozen; filling the server takes 128 addresses.
     */
    public static final int DEFAULT_PER_ADDRESS = 64;

    /**
     * The most calls one connection has open at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS; grpc-java's default
     * is no limit): each open stream holds heap of the server's, and a stream past the counted limits' checks (a bidi
     * stream that has sent nothing yet) is otherwise bounded by nothing. An honest client never comes near it (the
     * counted limits of one environment add up to about 2,200); a client that does waits for a stream to end rather
     * than fail.
     */
    public static final int MAX_CALLS_PER_CONNECTION = 4_096;

    /** How long a new connection may stay silent: an honest client sends its preface (or TLS hello) at once. */
    public static final Duration FIRST_BYTES_DEADLINE = Duration.ofSeconds(10);

    private static final Logger log = LoggerFactory.getLogger(OpenConnections.class);
    private static final long WARN_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final EnvironmentShares open;
    private final Duration firstBytesDeadline;
    // refusals not logged yet: touched only on the accept loop's one thread
    private long refusedSinceWarning;
    private String lastRefusal = "";
    private long nextWarning = System.nanoTime();
    private boolean warningDue;

    /**
     * @param limit      the most connections open at once, server-wide
     * @param perAddress the most of them from one address (at least 1, at most the limit)
     */
    public OpenConnections(int limit, int perAddress) {
        this(limit, perAddress, FIRST_BYTES_DEADLINE);
    }

    /** @param firstBytesDeadline how long a new connection may stay silent before it is closed */
    OpenConnections(int limit, int perAddress, Duration firstBytesDeadline) {
        this.open = new EnvironmentShares("open connections", limit, perAddress);
        this.firstBytesDeadline = firstBytesDeadline;
    }

    /** Connections open now, server-wide. */
    public int open() {
        return open.held();
    }

    /**
     * Makes {@code builder} accept its connections through this count, on event loops of its own (grpc-java takes a
     * channel of ours only with its loops), epoll's where the platform has it, as grpc-java would have chosen; and bounds
     * each connection's open calls to {@value #MAX_CALLS_PER_CONNECTION}.
     *
     * @return the loops, for {@link #shutdown} once the server has terminated
     */
    public EventLoopGroup[] applyTo(NettyServerBuilder builder) {
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup boss = epoll
                ? new EpollEventLoopGroup(1, DaemonThreads.named("chalk-compute-grpc-accept"))
                : new NioEventLoopGroup(1, DaemonThreads.named("chalk-compute-grpc-accept"));
        // as many as grpc-java's own loops: Netty's default, twice the processors
        EventLoopGroup workers = epoll
                ? new EpollEventLoopGroup(0, DaemonThreads.numbered("chalk-compute-grpc"))
                : new NioEventLoopGroup(0, DaemonThreads.numbered("chalk-compute-grpc"));
        builder.maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION);
        builder.bossEventLoopGroup(boss).workerEventLoopGroup(workers).channelFactory(() -> {
            ServerChannel channel = epoll ? new EpollServerSocketChannel() : new NioServerSocketChannel();
            // before the acceptor the bootstrap adds at registration: a refused connection is never registered
            channel.pipeline().addLast(new Admission());
            return channel;
        });
        return new EventLoopGroup[] {boss, workers};
    }

    /**
     * Makes {@code builder}, which serves a Unix socket on epoll loops it was given, accept its connections through this
     * count, and bounds each connection's open calls as on TCP. A peer is the pid namespace its process is in
     * ({@link #unixPeer}): every sandbox and replica has one of its own, whatever user ids it runs as (a user id is not
     * one: without user namespaces every sandbox is the same host user).
     */
    public void applyToUnixSocket(NettyServerBuilder builder) {
        builder.maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION);
        builder.channelFactory(() -> {
            ServerChannel channel = new EpollServerDomainSocketChannel();
            channel.pipeline().addLast(new Admission());
            return channel;
        });
    }

    /**
     * Who a Unix socket connection comes from: the pid namespace of the process that connected ({@code SO_PEERCRED}).
     * A process gone before it is looked at (or one whose namespace cannot be read) is of one peer shared by all such.
     */
    static String unixPeer(EpollDomainSocketChannel connection) {
        try {
            int pid = connection.peerCredentials().pid();
            return "pid namespace " + Files.readSymbolicLink(Path.of("/proc", Integer.toString(pid), "ns", "pid"));
        } catch (IOException | RuntimeException e) {
            return "a process gone before its namespace was read";
        }
    }

    /** Shuts down the loops {@link #applyTo} made. */
    public static void shutdown(EventLoopGroup[] loops) {
        for (EventLoopGroup loop : loops) {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    /** Sees each accepted connection before the server does: counts it until it closes, or closes it at once. */
    private final class Admission extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Channel connection = (Channel) msg;
            String address = connection instanceof EpollDomainSocketChannel local
                    ? unixPeer(local)
                    : PeerAddress.of(connection.remoteAddress(), connection.localAddress());
            EnvironmentShares.Place place;
            try {
                place = open.take(address, OpenConnections::refusal);
            } catch (ComputeException e) {
                connection.unsafe().closeForcibly();
                refused(ctx, e.getMessage());
                return;
            }
            // also completed when the connection fails to register: the place is given back on every path
            connection.closeFuture().addListener(closed -> place.close());
            connection.pipeline().addFirst(new FirstBytes(firstBytesDeadline));
            ctx.fireChannelRead(connection);
        }
    }

    /** Closes a connection that sends nothing within the deadline; steps aside at its first bytes. */
    private static final class FirstBytes extends ChannelInboundHandlerAdapter {
        private final Duration deadline;
        private @Nullable ScheduledFuture<?> timer;

        FirstBytes(Duration deadline) {
            this.deadline = deadline;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            timer = ctx.executor().schedule(() -> ctx.close(), deadline.toNanos(), TimeUnit.NANOSECONDS);
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            stop();
            ctx.pipeline().remove(this);
            ctx.fireChannelRead(msg);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            stop();
            ctx.fireChannelInactive();
        }

        private void stop() {
            if (timer != null) {
                timer.cancel(false);
            }
        }
    }

    /**
     * A flood is logged once a minute at most, with how many were refused since: not one line per connection, and the
     * last of a burst too (a warning falls due on the accept loop).
     */
    private void refused(ChannelHandlerContext ctx, String why) {
        refusedSinceWarning++;
        lastRefusal = why;
        if (!warningDue) {
            warningDue = true;
            long wait = Math.max(0, nextWarning - System.nanoTime());
            ctx.executor().schedule(this::warn, wait, TimeUnit.NANOSECONDS);
        }
    }

    private void warn() {
        warningDue = false;
        log.warn("Refused {} connection(s) since the last warning; the last one: {}", refusedSinceWarning, lastRefusal);
        refusedSinceWarning = 0;
        nextWarning = System.nanoTime() + WARN_EVERY_NANOS;
    }

    private static String refusal(EnvironmentShares.Refusal refusal, EnvironmentShares open, String address) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? address + " has " + open.held(address) + " connections open, the most one peer may (of the "
                        + open.limit() + " the server keeps open)"
                : "the server has " + open.held() + " connections open, its limit";
    }
}
