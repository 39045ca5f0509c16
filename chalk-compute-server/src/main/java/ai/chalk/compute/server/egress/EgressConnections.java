package ai.chalk.compute.server.egress;

import java.lang.management.ManagementFactory;

/**
 * How many connections the egress proxy holds at once. Each costs the server two file descriptors (the sandbox's side
 * and the destination's) and buffers, so without a bound one sandbox opening connections in a loop takes every
 * descriptor of the server, which then accepts no call and opens no file, for every sandbox and client. A connection
 * past either bound is closed as soon as it is accepted, and the refusal is logged; a sandbox holding fewer than
 * {@value #GUARANTEED} is let through even past the total, so that no sandbox is cut off by the others. Each
 * connection's kernel buffers are of a fixed size ({@link #CONNECTION_BYTES} at most).
 *
 * @param perSandbox one sandbox's connections at once
 * @param total      all sandboxes' together
 */
public record EgressConnections(int perSandbox, int total) {

    /** One sandbox's connections at once by default, at most: a browser holds about six per host. */
    public static final int PER_SANDBOX = 256;
    /**
     * Connections every sandbox may hold even when all sandboxes together hold the total: so that a few sandboxes
     * holding connections open cannot cut every other sandbox off.
     */
    public static final int GUARANTEED = 8;
    /**
     * The kernel's TCP buffers one connection through the proxy can hold, at most: its two sockets' send and receive
     * buffers, fixed ({@link EgressProxy#SANDBOX_SIDE_BUFFER}, {@link EgressProxy#UPSTREAM_BUFFER}) and doubled by the
     * kernel for its own bookkeeping. Left to grow, they reached 6.5 MB a connection for a sandbox that read nothing of
     * its downloads, and the host's TCP memory is one pool.
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
     * {@value #PER_SANDBOX} per sandbox; in total a quarter of the server's file descriptors (each connection takes
     * two, and the server needs the rest), at least 1,024.
     */
    public static EgressConnections forThisServer() {
        long descriptors = ManagementFactory.getOperatingSystemMXBean()
                        instanceof com.sun.management.UnixOperatingSystemMXBean unix
                ? unix.getMaxFileDescriptorCount()
                : 4096;
        return new EgressConnections(PER_SANDBOX, (int) Math.min(Integer.MAX_VALUE, Math.max(1024, descriptors / 4)));
    }
}
