package ai.chalk.compute.server.grpc;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.ServerTransportFilter;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.OptionalLong;

/**
 * Who a connection comes from, for what is counted or slowed down per caller without credentials: its address without
 * the port, so that new connections do not start afresh; an IPv6 address by its /64, which one host is given whole
 * (picking another address in it is free); and every loopback address as one per local user, {@value #LOOPBACK} and
 * the user's id ({@link LoopbackOwner}): any local user may bind a client socket to any of the 16 million addresses of
 * {@code 127.0.0.0/8}, so keyed one by one they were 16 million peers, each with its own share of the server's
 * connections and its own count of failed sign-ins; keyed as one, one local user held the share of all of them.
 */
public final class PeerAddress {

    private PeerAddress() {}

    /** A connection's peer as {@link #of(SocketAddress, SocketAddress)} keys it, kept with the connection. */
    private static final Attributes.Key<Kept> KEY = Attributes.Key.create("ai.chalk.compute.peer");

    /**
     * Keeps each connection's peer key, read at its first call that needs it: a loopback peer's key reads the kernel's
     * socket table, and read on every call it cost milliseconds of CPU per call (a health check without credentials,
     * 3 ms of it), for anyone who reaches the port. Read at the first call, on the call's thread, not as the connection
     * becomes ready, on the transport's, where every other connection of its event loop would wait for it.
     */
    public static final ServerTransportFilter KEEPER = new ServerTransportFilter() {
        @Override
        public Attributes transportReady(Attributes transport) {
            return transport.toBuilder()
                    .set(
                            KEY,
                            new Kept(
                                    transport.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR),
                                    transport.get(Grpc.TRANSPORT_ATTR_LOCAL_ADDR)))
                    .build();
        }
    };

    /** The key of a call's peer: the one its connection keeps ({@link #KEEPER}), else read now. */
    public static String ofCall(Attributes call) {
        Kept kept = call.get(KEY);
        return kept != null
                ? kept.key()
                : of(call.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR), call.get(Grpc.TRANSPORT_ATTR_LOCAL_ADDR));
    }

    /** One connection's peer key, read once. */
    private static final class Kept {
        private final SocketAddress peer;
        private final SocketAddress local;
        private String key;

        Kept(SocketAddress peer, SocketAddress local) {
            this.peer = peer;
            this.local = local;
        }

        synchronized String key() {
            if (key == null) {
                key = of(peer, local);
            }
            return key;
        }
    }

    /** The key of every loopback address ({@code 127.0.0.0/8}, {@code ::1}): this host's own users. */
    public static final String LOOPBACK = "loopback (127.0.0.0/8, ::1)";

    /**
     * The key of {@code peer} connected to {@code local}: as {@link #of(SocketAddress)}, and a peer on this host (a
     * loopback address, or the address it connected to) with the id of the local user whose socket it is
     * ({@code loopback (127.0.0.0/8, ::1), user 1000}: one peer per user, whichever of the host's addresses it uses),
     * when the kernel's socket table shows it.
     */
    public static String of(SocketAddress peer, SocketAddress local) {
        String key = of(peer);
        // from this host: a loopback address, or the host's own address the client connected to (eth0's, a bridge's),
        // which every local user may use as well
        if (peer instanceof InetSocketAddress client
                && local instanceof InetSocketAddress server
                && (key.equals(LOOPBACK)
                        || client.getAddress() != null && client.getAddress().equals(server.getAddress()))) {
            OptionalLong uid = LoopbackOwner.of(client, server);
            if (uid.isPresent()) {
                return LOOPBACK + ", user " + uid.getAsLong();
            }
        }
        return key;
    }

    /**
     * The key of {@code peer}: {@code 10.0.0.7}, {@code 2001:db8:0:0:0:0:0:0/64}, {@value #LOOPBACK}, or the socket's
     * own name.
     */
    public static String of(SocketAddress peer) {
        if (!(peer instanceof InetSocketAddress inet)) {
            return String.valueOf(peer);
        }
        InetAddress host = inet.getAddress();
        if (host == null) {
            return inet.getHostString();
        }
        if (host.isLoopbackAddress()) {
            return LOOPBACK;
        }
        if (host instanceof Inet6Address) {
            byte[] network = Arrays.copyOf(host.getAddress(), 16);
            Arrays.fill(network, 8, 16, (byte) 0);
            try {
                return InetAddress.getByAddress(network).getHostAddress() + "/64";
            } catch (UnknownHostException e) {
                throw new IllegalStateException("16 bytes are an IPv6 address", e);
            }
        }
        return host.getHostAddress();
    }
}
