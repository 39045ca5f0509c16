package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.network.TcpMemory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;

/**
 * What all of a runtime's sandboxes may hold of the host together, written in their common parent group: each
 * sandbox's own limits are the tenant's choice (memory up to a pebibyte), so without this cap a few sandboxes could take
 * the host's memory, process ids or TCP memory from everything else on it, the server included. The local runtime's
 * drivers write it in their base group; the Docker runtime in the parent group of its containers.
 *
 * @param memoryBytes the memory of all sandboxes together; 0 or less for no cap (the host's is unknown)
 * @param pids        the processes and threads of all sandboxes together
 */
public record SandboxesCap(long memoryBytes, long pids) {

    /** Half the host's process ids and three quarters of its memory (see {@link CgroupFiles}). */
    public static SandboxesCap ofHost() {
        return new SandboxesCap(CgroupFiles.memoryForAllSandboxes(), CgroupFiles.pidsForAllSandboxes());
    }

    /** The cap in words, for the runtime's description of its isolation. */
    public String describe() {
        return (memoryBytes > 0 ? (memoryBytes >> 20) + " MiB of memory and " : "") + pids + " processes";
    }

    /**
     * Writes the cap of {@code controller} ({@code memory} or {@code pids}; others have none) in {@code dir}, a group of
     * its cgroup v1 hierarchy. The memory cap also bounds the group's TCP buffers, which cgroup v1 otherwise charges to
     * no group, to {@link TcpMemory#forAllSandboxes}.
     */
    public void writeV1(String controller, Path dir) throws IOException {
        switch (controller) {
            case "pids" -> CgroupFiles.write(dir.resolve("pids.max"), Long.toString(pids));
            case "memory" -> {
                if (memoryBytes > 0) {
                    CgroupFiles.write(dir.resolve("memory.limit_in_bytes"), Long.toString(memoryBytes));
                    Path tcp = dir.resolve("memory.kmem.tcp.limit_in_bytes");
                    if (Files.exists(tcp)) { // absent on kernels that no longer have it (v2 is the way there)
                        CgroupFiles.write(tcp, Long.toString(Math.min(memoryBytes, TcpMemory.forAllSandboxes())));
                    }
                }
            }
            default -> {}
        }
    }

    /** Writes the caps in {@code dir}, a group of the unified hierarchy whose {@code controllers} are enabled. */
    public void writeV2(Path dir, Collection<String> controllers) throws IOException {
        if (controllers.contains("pids")) {
            CgroupFiles.write(dir.resolve("pids.max"), Long.toString(pids));
        }
        if (controllers.contains("memory") && memoryBytes > 0) {
            CgroupFiles.write(dir.resolve("memory.max"), Long.toString(memoryBytes));
        }
    }
}
