package ai.chalk.compute.server.grpc;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

/**
 * Who a connection comes from, for what is counted or slowed down per caller without credentials: its address without
 * the port, so that new connections do not start afresh; an IPv6 address by its /64, which one host is given whole
 * (picking another address in it is free); and every loopback address as one, {@value #LOOPBACK}: any local user may
 * bind a client socket to any of the 16 million addresses of {@code 127.0.0.0/8}, so keyed one by one they were 16
 * million peers, each with its own share of the server's connections and its own count of failed sign-ins.
 */
public final class PeerAddress {

    private PeerAddress() {}

    /** The key of every loopback address ({@code 127.0.0.0/8}, {@code ::1}): this host's own users. */
    public static final String LOOPBACK = "loopback (127.0.0.0/8, ::1)";

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
