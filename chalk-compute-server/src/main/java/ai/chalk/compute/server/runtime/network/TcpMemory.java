package ai.chalk.compute.server.runtime.network;

import ai.chalk.compute.server.runtime.host.Sysctl;
import java.nio.file.Path;

/**
 * The host's TCP memory, and the share of it sandboxes may hold. The kernel keeps one pool of memory for the buffers of
 * every TCP socket of the host ({@code net.ipv4.tcp_mem}, in pages: below the first number all is well, past the second
 * every socket is under pressure and gets smaller buffers, at the third no socket gets more), whatever cgroup a socket
 * is charged to. So a sandbox's sockets are held to a share of that pool, not only to its memory.
 */
public final class TcpMemory {

    private TcpMemory() {}

    /**
     * What all of a runtime's sandboxes may hold together: half of what the host holds before it puts every socket
     * under pressure, so that sandboxes alone never bring the host's TCP there, let alone to its limit, where no socket
     * of the host, the server's included, gets buffers.
     */
    public static long forAllSandboxes() {
        return Pool.FOR_ALL_SANDBOXES;
    }

    /** Read once: every sandbox's create asks, and the setting is the host's boot-time sizing (a restart follows it). */
    private static final class Pool {
        static final long FOR_ALL_SANDBOXES =
                Sysctl.read(Path.of("/proc/sys/net/ipv4/tcp_mem"), 1).orElse(98_304L) * 4096 / 2;
    }

    /**
     * What one sandbox with {@code memoryBytes} of memory may hold: a quarter of {@link #forAllSandboxes}, within its
     * memory, so that one sandbox cannot take all of it from the others. Hundreds of megabytes on a host of a few
     * gigabytes: more than fast transfers need.
     */
    public static long forOneSandbox(long memoryBytes) {
        return Math.min(memoryBytes, forAllSandboxes() / 4);
    }
}
