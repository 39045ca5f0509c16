package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.userns.IdRange;
import java.util.Optional;

/**
 * The started pieces of a sandbox, handed from its start to the sandbox: its init (none without isolation), the
 * syscall filter its processes go under, its way out when it has network, and the host ids it runs as.
 *
 * @param process      the init's host process; null without isolation
 * @param pid          the init's host pid; -1 without isolation
 * @param pidNamespace the init's pid namespace; null without isolation
 * @param filter       the syscall filter; null without isolation
 * @param egress       the sandbox's way out when it has network (slirp4netns, or its link to the egress proxy), else
 *                     null
 * @param ids          the host ids of its user namespace; empty: host root without capabilities
 */
record SandboxInit(
        Process process, long pid, String pidNamespace, SandboxFilter filter, WayOut egress, Optional<IdRange> ids) {

    /** A sandbox without isolation: no init. */
    static final SandboxInit NONE = new SandboxInit(null, -1, null, null, null, Optional.empty());

    SandboxInit withEgress(WayOut e) {
        return new SandboxInit(process, pid, pidNamespace, filter, e, ids);
    }

    /** What a sandbox's network needs closed when it ends. */
    @FunctionalInterface
    interface WayOut extends AutoCloseable {
        @Override
        void close();
    }

    SandboxInit withIds(Optional<IdRange> r) {
        return new SandboxInit(process, pid, pidNamespace, filter, egress, r);
    }
}
