package ai.chalk.compute.server.runtime.local.cgroup;

import java.util.List;

/**
 * A group of processes that can be killed as a whole, whatever left the process tree: a cgroup v1 {@code pids} group
 * or a cgroup v2 group, with everything below it.
 */
public interface ProcessGroup {

    /** The processes in the group and its sub-groups, as host pids. */
    List<Long> procs();

    /**
     * Stops the group from forking, then SIGKILLs every process in it (and its sub-groups) until none is left or
     * {@code timeoutMillis} passed. Returns whether the group is empty.
     */
    boolean killAll(long timeoutMillis);

    /** Removes the group if nothing runs in it any more; returns whether it is gone. */
    boolean removeIfEmpty();
}
