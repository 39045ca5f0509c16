package ai.chalk.compute.server.runtime.local.cgroup;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The cgroups of one sandbox, with its limits set when they were created (runc's {@code cgroups.Manager} for one
 * container): its init joins {@link #initProcsFiles}, each exec a group of its own from {@link #newExec}; the
 * sandbox freezes, thaws and is removed as a whole.
 */
public interface SandboxCgroup {

    /** The {@code cgroup.procs} files the sandbox's init must be written into. */
    List<Path> initProcsFiles();

    /** A new per-exec group; its {@link ExecCgroup#procsFiles} are what the exec's first process joins. */
    ExecCgroup newExec() throws IOException;

    /** The sandbox's whole group (init and every exec), to kill everything in it; empty where there is none. */
    Optional<ProcessGroup> processGroup();

    /**
     * The sandbox's group directory in which {@code controller}'s files are (on cgroup v2 one directory for all),
     * when the controller is in use.
     */
    Optional<Path> dir(String controller);

    /** Every process in any of the sandbox's groups. */
    List<Long> allProcs();

    /** Whether the sandbox can be frozen. */
    boolean hasFreezer();

    /**
     * Freezes every process in the sandbox (and any that joins later) and returns once all are frozen.
     *
     * @throws IOException when there is no freezer, or the processes did not all freeze within {@code timeoutMillis}
     *                     (a process stuck in the kernel); the group is thawed again then
     */
    void freeze(long timeoutMillis) throws IOException;

    /** Lets the processes of a frozen sandbox continue; does nothing when it is not frozen. */
    void thaw() throws IOException;

    /** Kills anything left and removes every group of the sandbox. */
    void remove();

    /** The message of a freeze that timed out, the same on both versions. */
    static String freezeTimedOut(long timeoutMillis) {
        return "not every process of the sandbox could be frozen within " + timeoutMillis
                + " ms (one is busy in the kernel); try again";
    }
}
