package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collection;

/**
 * The cgroup v2 limit files, the unified hierarchy's spelling of what {@link CgroupV1} writes: {@code cpu.max}
 * ({@code "quota period"}), {@code memory.max} with {@code memory.swap.max} 0, {@code pids.max}. Only the files of
 * controllers in use are written; the others' limits are not enforced, as on v1 (the driver's problem says why).
 */
final class V2Limits {

    private V2Limits() {}

    /** Sets one sandbox's limits in its group {@code dir}. */
    static void set(Path dir, Collection<String> controllers, ResourceLimits limits, long pidsMax) throws IOException {
        if (controllers.contains("cpu") && limits.milliCpus().isPresent()) {
            long quota = Math.max(1_000, limits.milliCpus().get() * CgroupDriver.CFS_PERIOD_US / 1_000);
            CgroupFiles.write(dir.resolve("cpu.max"), quota + " " + CgroupDriver.CFS_PERIOD_US);
        }
        if (controllers.contains("memory") && limits.memoryBytes().isPresent()) {
            CgroupFiles.write(
                    dir.resolve("memory.max"),
                    Long.toString(limits.memoryBytes().get()));
            try {
                // no swapping past the limit either (v1 sets memory.memsw.limit_in_bytes to the limit for this)
                CgroupFiles.write(dir.resolve("memory.swap.max"), "0");
            } catch (IOException e) {
                // no swap accounting (the file is missing): the memory limit alone applies
            }
        }
        if (controllers.contains("pids")) {
            CgroupFiles.write(dir.resolve("pids.max"), Long.toString(pidsMax));
        }
    }
}
