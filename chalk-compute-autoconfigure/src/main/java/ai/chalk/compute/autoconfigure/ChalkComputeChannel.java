package ai.chalk.compute.autoconfigure;

import ai.chalk.compute.connection.ConnectionFailures;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The gRPC channel the application's {@code SandboxClient} talks through: to the remote
 * {@code chalk.compute.target}, or in-process to the embedded server.
 *
 * <p>The auto-configuration opens it through Spring gRPC's {@code GrpcChannelFactory} when present,
 * so {@code spring.grpc.client.*} settings, global client interceptors and observations apply, and
 * puts the {@link ChalkComputeChannelInterceptor} beans (tracing of sandbox lifecycle steps,
 * authentication) in front. A call that cannot reach the server fails with a message naming the target and the
 * cause ({@code UNAVAILABLE: connection refused to localhost:50051}, see {@link ConnectionFailures}). Define a bean of this type to use a channel of your own:
 * <pre>{@code
 * @Bean
 * ChalkComputeChannel chalkComputeChannel() {
 *     return ChalkComputeChannel.remote(ManagedChannelBuilder.forTarget("compute:50051").build(), "compute:50051");
 * }
 * }</pre>
 * The auto-configuration opens the underlying channel on the first call, so an application that does not
 * use Chalk Compute at startup does not pay for it there. Closing it shuts the channel down.
 */
public final class ChalkComputeChannel implements AutoCloseable {

    /** Where a channel leads. */
    public enum Kind {
        /** The server embedded in this application, through gRPC's in-process transport. */
        EMBEDDED,
        /** A server elsewhere, over the network. */
        REMOTE
    }

    private final Opened opened;
    private final Channel channel;
    private final String target;
    private final Kind kind;

    private ChalkComputeChannel(Opened opened, Channel channel, String target, Kind kind) {
        this.opened = Objects.requireNonNull(opened, "opened");
        this.channel = Objects.requireNonNull(channel, "channel");
        this.target = Objects.requireNonNull(target, "target");
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    private static ChalkComputeChannel of(Opened opened, String target, Kind kind) {
        // a call that cannot reach the server says where it went and why: "connection refused to localhost:50051"
        return new ChalkComputeChannel(opened, ConnectionFailures.intercept(opened, target), target, kind);
    }

    /**
     * A channel to a remote server.
     *
     * @param channel the channel; closing this object shuts it down
     * @param target  the address it leads to, as shown in health details
     * @return the channel
     */
    public static ChalkComputeChannel remote(ManagedChannel channel, String target) {
        Objects.requireNonNull(channel, "channel");
        return of(new Opened(() -> channel, target), target, Kind.REMOTE);
    }

    /**
     * A channel to a remote server, opened on the first call.
     *
     * @param opener opens the channel; called once, on the first call; closing this object shuts it down
     * @param target the address it leads to, as shown in health details
     * @return the channel
     */
    public static ChalkComputeChannel remote(Supplier<ManagedChannel> opener, String target) {
        return of(new Opened(opener, target), target, Kind.REMOTE);
    }

    /**
     * A channel to the embedded server.
     *
     * @param channel       an in-process channel; closing this object shuts it down
     * @param inProcessName the embedded server's in-process name
     * @return the channel
     */
    public static ChalkComputeChannel embedded(ManagedChannel channel, String inProcessName) {
        Objects.requireNonNull(channel, "channel");
        return embedded(() -> channel, inProcessName);
    }

    /**
     * A channel to the embedded server, opened on the first call.
     *
     * @param opener        opens an in-process channel; called once, on the first call
     * @param inProcessName the embedded server's in-process name
     * @return the channel
     */
    public static ChalkComputeChannel embedded(Supplier<ManagedChannel> opener, String inProcessName) {
        String target = "in-process:" + inProcessName;
        return of(new Opened(opener, target), target, Kind.EMBEDDED);
    }

    /**
     * This channel with interceptors in front: the first one sees each call first.
     *
     * @param interceptors the interceptors, outermost first
     * @return a new object sharing the underlying channel
     */
    public ChalkComputeChannel withInterceptors(List<? extends ClientInterceptor> interceptors) {
        if (interceptors.isEmpty()) {
            return this;
        }
        return new ChalkComputeChannel(
                opened, ClientInterceptors.interceptForward(channel, interceptors), target, kind);
    }

    /** The channel calls go through, interceptors included. */
    public Channel channel() {
        return channel;
    }

    /** The underlying channel, without the interceptors added by {@link #withInterceptors(List)}; opened now if it was not. */
    public ManagedChannel managedChannel() {
        return opened.get();
    }

    /** The address: {@code host:port}, a Spring gRPC channel name, or {@code in-process:<name>}. */
    public String target() {
        return target;
    }

    /** Where the channel leads. */
    public Kind kind() {
        return kind;
    }

    /** Whether the channel leads to the embedded server. */
    public boolean isEmbedded() {
        return kind == Kind.EMBEDDED;
    }

    /**
     * Makes a channel that failed to connect try again at once rather than after gRPC's reconnect backoff (which
     * grows to two minutes, failing calls fast meanwhile): for a caller that knows the server may be back. Nothing
     * happens to a channel not opened yet, or connected.
     */
    public void reconnectNow() {
        opened.resetConnectBackoff();
    }

    /** Shuts the channel down, waiting briefly for calls in flight; later calls fail. */
    @Override
    public void close() {
        ManagedChannel managedChannel = opened.close();
        if (managedChannel == null) {
            return;
        }
        managedChannel.shutdown();
        try {
            if (!managedChannel.awaitTermination(5, TimeUnit.SECONDS)) {
                managedChannel.shutdownNow();
            }
        } catch (InterruptedException e) {
            managedChannel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "ChalkComputeChannel[" + kind + " " + target + "]";
    }

    /** The underlying channel, opened on first use. */
    private static final class Opened extends Channel {

        private final Supplier<ManagedChannel> opener;
        private final String target;
        private ManagedChannel channel;
        private boolean closed;

        Opened(Supplier<ManagedChannel> opener, String target) {
            this.opener = Objects.requireNonNull(opener, "opener");
            this.target = target;
        }

        synchronized ManagedChannel get() {
            if (closed) {
                throw new IllegalStateException("the Chalk Compute channel to " + target + " has been closed");
            }
            if (channel == null) {
                channel = Objects.requireNonNull(opener.get(), "the opener returned no channel");
            }
            return channel;
        }

        synchronized void resetConnectBackoff() {
            if (channel != null && !closed) {
                channel.resetConnectBackoff();
            }
        }

        /** Marks it closed; returns the channel to shut down, or {@code null} when none was opened. */
        synchronized ManagedChannel close() {
            closed = true;
            return channel;
        }

        @Override
        public <Q, R> ClientCall<Q, R> newCall(MethodDescriptor<Q, R> method, CallOptions options) {
            return get().newCall(method, options);
        }

        @Override
        public synchronized String authority() {
            return channel != null ? channel.authority() : target.startsWith("in-process:") ? "localhost" : target;
        }
    }
}
