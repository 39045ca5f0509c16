package ai.chalk.compute.server.grpc;

import java.io.BufferedReader;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * The local user whose process holds the client end of a loopback TCP connection to this server, read from the
 * kernel's socket table ({@code /proc/net/tcp} and {@code tcp6}: the line whose local end is the client's and remote
 * end the server's, and its {@code uid} column). Every local user connects from the same addresses, so keyed by
 * address alone one of them could take the connections and the failed sign-ins every other local user shares.
 */
final class LoopbackOwner {

    private static final List<Path> TABLES = List.of(Path.of("/proc/net/tcp"), Path.of("/proc/net/tcp6"));

    private LoopbackOwner() {}

    /**
     * Lines of the socket table read at most per lookup: a local user closing connections in a loop fills the table
     * with TIME_WAIT lines (up to {@code tcp_max_tw_buckets}), and reading all of them on every accept would slow the
     * server's accepts for everyone; past this many the owner is unknown and the peer is the shared loopback key.
     */
    static final int MAX_LINES = 20_000;

    /**
     * The uid owning {@code client}'s live socket connected to {@code server}; empty when the table does not show it
     * within {@link #MAX_LINES} lines. Sockets that are closing (TIME_WAIT and its kin, printed with uid 0 and inode
     * 0) are never taken: a client that closed at once would have been charged to root.
     */
    static OptionalLong of(InetSocketAddress client, InetSocketAddress server) {
        int lines = 0;
        for (Path table : TABLES) {
            try (BufferedReader in = Files.newBufferedReader(table, StandardCharsets.US_ASCII)) {
                in.readLine(); // the header
                for (String line = in.readLine(); line != null && lines < MAX_LINES; line = in.readLine()) {
                    lines++;
                    String[] f = line.trim().split("\\s+", 11);
                    if (f.length > 9
                            && f[3].equals(ESTABLISHED)
                            && !f[9].equals("0")
                            && matches(f[1], client)
                            && matches(f[2], server)) {
                        return OptionalLong.of(Long.parseLong(f[7]));
                    }
                }
            } catch (IOException | RuntimeException e) {
                // no such table (no IPv6), or one this code cannot read: the next, or no owner
            }
        }
        return OptionalLong.empty();
    }

    /** The state column of a connected socket. */
    private static final String ESTABLISHED = "01";

    /** Whether {@code hexAddressAndPort} ({@code 0100007F:1F90}) is {@code address}. */
    static boolean matches(String hexAddressAndPort, InetSocketAddress address) {
        int colon = hexAddressAndPort.indexOf(':');
        if (colon < 0 || Integer.parseInt(hexAddressAndPort.substring(colon + 1), 16) != address.getPort()) {
            return false;
        }
        InetAddress a = decode(hexAddressAndPort.substring(0, colon));
        return a != null && a.equals(address.getAddress());
    }

    /**
     * The kernel's hex form of an address: 32-bit words in the host's byte order (little-endian here), one for IPv4,
     * four for IPv6; an IPv4-mapped IPv6 address becomes the IPv4 one, as Java has it.
     */
    static InetAddress decode(String hex) {
        if (hex.length() != 8 && hex.length() != 32) {
            return null;
        }
        byte[] bytes = new byte[hex.length() / 2];
        for (int word = 0; word < bytes.length / 4; word++) {
            for (int b = 0; b < 4; b++) {
                int at = word * 8 + (3 - b) * 2;
                bytes[word * 4 + b] = (byte) Integer.parseInt(hex.substring(at, at + 2), 16);
            }
        }
        try {
            return InetAddress.getByAddress(bytes);
        } catch (UnknownHostException e) {
            return null;
        }
    }
}
