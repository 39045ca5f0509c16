package ai.chalk.compute.server.egress;

import ai.chalk.compute.server.runtime.network.TcpMemory;
import java.lang.management.ManagementFactory;

/**
 * How many connections the egress proxy holds at once. Each costs the server two file descriptors (the sandbox's side
 * and the destination's) and buffers, so without a bound one sandbox opening connections in a loop takes every
 * descriptor of the server, which then accepts no call and opens no file, for every sandbox and client. A connection
 * past either bound is closed as soon as it is accepted, and the refusal is logged.
 *
 * @param perSandbox one sandbox's connections at once
 * @param total      all sandboxes' together
 */
public record EgressConnections(int perSandbox, int total) {

    /** One sandbox's connections at once by default, at most: a browser holds about six per host. */
    public static final int PER_SANDBOX = 256;
    /**
     * The kernel's TCP buffers one connection through the proxy can hold, at most: its two sockets' send and receive
     * buffers, fixed ({@link EgressProxy#SANDBOX_SIDE_BUFFER}, {@link EgressProxy#UPSTREAM_BUFFER}) and doubled by the
     * kernel for its own bookkeeping. Left to grow, they reach 10 MB a connection for a sandbox that reads nothing of
     * a download, and the host's TCP memory is one pool.
     */
    public static final long CONNECTION_BYTES =
            2L * 2 * (EgressProxy.SANDBOX_SIDE_BUFFER + EgressProxy.UPSTREAM_BUFFER);

    public EgressConnections {
        if (perSandbox < 1 || total < perSandbox) {
            throw new IllegalArgumentException("egress connections: per sandbox " + perSandbox + " (min 1), in total "
                    + total + " (at least the per-sandbox number)");
        }
    }

    /**
     * In total, as many as the server can hold: a quarter of its file descriptors (each connection takes two, and the
     * server needs the rest), and no more than the sandboxes' share of the host's TCP memory
     * ({@link TcpMemory#forAllSandboxes}) can buffer at {@link #CONNECTION_BYTES} each; per sandbox a quarter of
     * that, at most {@value #PER_SANDBOX}.
     */
    public static EgressConnections forThisServer() {
        long descriptors = ManagementFactory.getOperatingSystemMXBean()
                        instanceof com.sun.management.UnixOperatingSystemMXBean unix
                ? unix.getMaxFileDescriptorCount()
                : 4096;
        long total = Math.max(64, Math.min(descriptors / 4, TcpMemory.forAllSandboxes() / CONNECTION_BYTES));
        int perSandbox = (int) Math.min(PER_SANDBOX, Math.max(16, total / 4));
        return new EgressConnections(perSandbox, (int) Math.min(Integer.MAX_VALUE, total));
    }
}
