package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.Sysctl;
import ai.chalk.compute.server.runtime.network.TcpMemory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks, once a container runs, that its sockets' TCP buffers are charged to its memory group on a cgroup v1 host, up
 * to its share of the host's ({@link TcpMemory}), and sets the limit where the engine did not. Cgroup v1 charges them
 * to no group unless the group's {@code memory.kmem.tcp.limit_in_bytes} is set, and the kernel's TCP memory is one
 * pool for the whole host: without it, a container with 64 MiB of memory held 600 MB of it in connections nobody
 * reads. The engine sets it as it creates the container ({@link SandboxContainerDef.SocketBufferLimit}); engines that
 * no longer read that option leave it to this, later, so that a socket the image's init made before it is not
 * charged, which is logged once. Cgroup v2 charges socket buffers to {@code memory.max} already (still from the
 * host's one pool: a container of several gigabytes of memory can hold that much of it, see the README).
 */
final class ContainerSocketBuffers {

    private static final Logger log = LoggerFactory.getLogger(ContainerSocketBuffers.class);
    private static final AtomicBoolean warned = new AtomicBoolean();

    private ContainerSocketBuffers() {}

    /**
     * The limit on the socket buffers of the container whose init has host pid {@code initHostPid}, set here if the
     * engine did not set it; empty where there is none to set (cgroup v2, a kernel without the setting) or it could
     * not be set (logged).
     */
    static Optional<Long> limit(long initHostPid, String containerId) {
        Optional<Path> memory = ContainerCgroups.v1(initHostPid, containerId, "memory");
        if (memory.isEmpty() || !Files.exists(memory.get().resolve("memory.kmem.tcp.limit_in_bytes"))) {
            return Optional.empty();
        }
        Path tcp = memory.get().resolve("memory.kmem.tcp.limit_in_bytes");
        try {
            long share = TcpMemory.forOneSandbox(
                    Sysctl.read(memory.get().resolve("memory.limit_in_bytes")).orElse(Long.MAX_VALUE));
            long set = Sysctl.read(tcp).orElse(Long.MAX_VALUE);
            if (set <= share) {
                return Optional.of(set);
            }
            Files.writeString(tcp, Long.toString(share), StandardCharsets.US_ASCII);
            if (warned.compareAndSet(false, true)) {
                log.warn("The Docker engine ignores KernelMemoryTCP: the runtime limits a container's socket buffers"
                        + " once it runs, so sockets its image's init makes before are not charged to it (cgroup v2"
                        + " charges them all)");
            }
            return Optional.of(share);
        } catch (IOException e) {
            log.warn("Cannot limit the socket buffers of container {} ({}): {}", containerId, tcp, e.toString());
            return Optional.empty();
        }
    }
}
