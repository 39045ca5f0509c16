package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * How a local runtime uses this host's cgroups. Every runtime owns {@code <its own cgroup>/chalk-compute/<key>}
 * ({@code key} is derived from its state directory, so two runtimes on one host never touch each other's groups) and
 * creates one {@link SandboxCgroup} per sandbox below it. Groups are nested under the server's own cgroup so that
 * limits put on the server still bound its sandboxes.
 *
 * <p>{@link #detect} picks the implementation: {@link CgroupV1} where the v1 controllers are mounted (hybrid hosts
 * included), {@link CgroupV2} on the unified hierarchy, {@link NoCgroups} with the reason otherwise. A controller that
 * cannot be used is left out and named in {@link #problem} on both versions: its limit is not enforced, the rest are.
 */
public sealed interface CgroupDriver permits CgroupV1, CgroupV2, NoCgroups {

    /** The controllers that limit a sandbox; {@link #controllers()} lists those in use. */
    List<String> CONTROLLERS = List.of("cpu", "memory", "pids");
    /** The CFS period of a sandbox's cpu quota, in microseconds (the kernel's default). */
    long CFS_PERIOD_US = 100_000;

    /** Finds this host's cgroups and prepares this runtime's base groups. */
    static CgroupDriver detect(String key) {
        return CgroupDetection.detect(key);
    }

    /** No cgroups at all, for the reason given. */
    static CgroupDriver unavailable(String reason) {
        return new NoCgroups(reason);
    }

    /** {@code cgroup v1} or {@code cgroup v2}, as the isolation report names it. */
    String version();

    /** Limiting controllers this runtime enforces, in {@link #CONTROLLERS} order (the freezer is not one). */
    List<String> controllers();

    /** Whether {@code controller} (a limiting one, or {@code freezer}) is in use. */
    boolean has(String controller);

    /** Whether sandboxes get groups at all: some limiting controller or the freezer is usable. */
    boolean any();

    /** Whether every exec gets a group of its own, which kills reach daemons that left its process tree by. */
    boolean tracksExecs();

    /** Whether sandboxes can be frozen (suspended). */
    boolean freezer();

    /** What suspends sandboxes here, for messages that say it is unavailable. */
    String freezerName();

    /** Why the freezer is unusable, if it is. */
    Optional<String> freezerProblem();

    /** Why some or all controllers are unusable, if they are. */
    Optional<String> problem();

    /** Creates the groups of a sandbox, with its limits set (those of controllers in use). */
    SandboxCgroup create(String id, ResourceLimits limits, long pidsMax) throws IOException;

    /** This runtime's base group in each hierarchy (sandbox groups are named by id below them). */
    Collection<Path> baseDirs();

    /** Sandbox ids that have groups under this runtime's base. */
    default List<String> leftoverIds() {
        return CgroupFiles.childNames(baseDirs());
    }

    /** Removes this runtime's base groups if no sandbox group is left in them. */
    default void removeBaseIfEmpty() {
        for (Path dir : baseDirs()) {
            try {
                CgroupFiles.rmdir(dir);
            } catch (IOException e) {
                // still in use
            }
        }
    }

    /** Kills whatever still runs in a sandbox's groups and removes them. */
    void removeSandbox(String id);
}
