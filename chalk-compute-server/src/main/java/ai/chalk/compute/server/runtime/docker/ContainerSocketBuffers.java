package ai.chalk.compute.server.runtime.docker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Charges the TCP buffers of a container's sockets to its memory limit on cgroup v1 hosts. Cgroup v1 counts them
 * against no group unless the group's {@code memory.kmem.tcp.limit_in_bytes} is set, and the engine sets it only when
 * asked ({@code KernelMemoryTCP}, deprecated, with no field in docker-java); the kernel's TCP memory is one pool for
 * the whole host ({@code net.ipv4.tcp_mem}), so a container with 64 MiB of memory could hold hundreds of megabytes of
 * it in connections nobody reads, and with more connections take the host's TCP to its limit, where no socket of the
 * host gets buffers. Cgroup v2 counts them in {@code memory.max} already. Set before the sandbox's first exec: the
 * kernel charges a socket to the group it was made in only when the limit was set by then.
 */
final class ContainerSocketBuffers {

    private static final Logger log = LoggerFactory.getLogger(ContainerSocketBuffers.class);
    /** cgroup v1's "no limit", as the kernel reports it (the largest multiple of the page size). */
    private static final long UNLIMITED = 0x7FFFFFFFFFFFF000L;

    private ContainerSocketBuffers() {}

    /**
     * Limits the socket buffers of the container whose init has host pid {@code initHostPid} to its memory limit;
     * returns the limit set, empty where nothing was to be done (cgroup v2, no memory limit, a kernel without the
     * setting) or it could not be done (logged).
     */
    static Optional<Long> limit(long initHostPid, String containerId) {
        Optional<Path> memory = ContainerCgroups.v1(initHostPid, containerId, "memory");
        if (memory.isEmpty()) {
            return Optional.empty();
        }
        Path tcp = memory.get().resolve("memory.kmem.tcp.limit_in_bytes");
        try {
            long bytes = Long.parseLong(Files.readString(memory.get().resolve("memory.limit_in_bytes"))
                    .strip());
            if (bytes >= UNLIMITED || !Files.exists(tcp)) {
                return Optional.empty();
            }
            Files.writeString(tcp, Long.toString(bytes), StandardCharsets.US_ASCII);
            return Optional.of(bytes);
        } catch (IOException | NumberFormatException e) {
            log.warn(
                    "Cannot count the socket buffers of container {} against its memory ({}): {}",
                    containerId,
                    tcp,
                    e.toString());
            return Optional.empty();
        }
    }
}
