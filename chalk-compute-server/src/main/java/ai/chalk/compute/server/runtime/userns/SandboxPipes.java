package ai.chalk.compute.server.runtime.userns;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Gives the pipes a sandbox's command runs on, its standard streams, which the server made as host root, to the
 * sandbox's root, so that the command can open them again by name: {@code echo x > /dev/stderr} opens
 * {@code /proc/self/fd/2}, which for a pipe checks the pipe's owner, and with an owner outside the sandbox's ids every
 * such redirection said "Permission denied" (a container runtime gives its stdio pipes to the container's root the
 * same way).
 *
 * <p>Each descriptor is taken from the process itself ({@code pidfd_getfd}) and changed only when it is a pipe: the
 * server changes the object it checked, never what a path resolves to later, so nothing the sandbox could have put on
 * that descriptor meanwhile is changed. What the sandbox gains is its own streams, which it could read and write
 * already. Needs Linux 5.6 and the right to take a child's descriptors ({@link #works}); elsewhere, or once the
 * process has ended, nothing changes.
 */
public final class SandboxPipes {

    /** ESRCH, EBADF: the process ended, or closed the descriptor; nothing wrong with the calls. */
    private static final int GONE = 3;

    private static final int CLOSED = 9;

    /** Whether the calls work here: the probe's answer, false once one fails for another reason than an ended process. */
    private static volatile boolean works = probe();

    private SandboxPipes() {}

    /**
     * Gives descriptors 0, 1 and 2 of process {@code pid}, those that are pipes, to the first id of {@code ids}.
     *
     * @return whether none was left to another owner (false when the process ended or a call failed)
     */
    public static boolean giveTo(long pid, IdRange ids) {
        if (!works) {
            return false;
        }
        IdMapCalls c = IdMapCalls.INSTANCE;
        int pidfd;
        try {
            pidfd = c.pidfd_open((int) pid, 0);
        } catch (LastErrorException e) {
            return failed(e);
        }
        try {
            boolean all = true;
            for (int fd = 0; fd <= 2; fd++) {
                all &= give(pidfd, fd, (int) ids.first());
            }
            return all;
        } finally {
            c.close(pidfd);
        }
    }

    /**
     * Gives descriptor {@code fd} of the process to {@code owner} if it is a pipe. A process starting in a sandbox's
     * cgroups points its stdout at a {@code cgroup.procs} file for a few microseconds (the shell that joins them,
     * {@code echo $$ > ...}): what is not a pipe is looked at again, for a few milliseconds, and never changed.
     */
    private static boolean give(int pidfd, int fd, int owner) {
        IdMapCalls c = IdMapCalls.INSTANCE;
        for (int look = 0; look < LOOKS; look++) {
            int own;
            try {
                own = c.pidfd_getfd(pidfd, fd, 0);
            } catch (LastErrorException e) {
                return failed(e);
            }
            try {
                if (isPipe(own)) {
                    c.fchown(own, owner, owner);
                    return true;
                }
            } catch (LastErrorException e) {
                return failed(e);
            } finally {
                c.close(own);
            }
            java.util.concurrent.locks.LockSupport.parkNanos(LOOK_AGAIN_NANOS);
        }
        return false;
    }

    /** How often, and how far apart, a descriptor that is not a pipe is looked at. */
    private static final int LOOKS = 40;

    private static final long LOOK_AGAIN_NANOS = 100_000;

    /**
     * Whether the calls work here, so that an exec may wait for its pipes to be its own (see
     * {@code SandboxCommands.AWAIT_PIPES}). Reading it first, as a runtime starts, makes the calls ready to use.
     */
    public static boolean works() {
        return works;
    }

    private static boolean failed(LastErrorException e) {
        if (e.getErrorCode() != GONE && e.getErrorCode() != CLOSED) {
            works = false; // refused here (a security module, say): no exec waits for what will not come
        }
        return false;
    }

    /** Whether this process's descriptor {@code fd} is a pipe (its link in {@code /proc/self/fd} says so). */
    private static boolean isPipe(int fd) {
        try {
            return Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd))
                    .toString()
                    .startsWith("pipe:");
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean probe() {
        try {
            IdMapCalls c = IdMapCalls.INSTANCE;
            int root = c.open("/", IdMapCalls.O_RDONLY | IdMapCalls.O_CLOEXEC); // a descriptor surely open
            try {
                int pidfd = c.pidfd_open((int) ProcessHandle.current().pid(), 0);
                try {
                    int own = c.pidfd_getfd(pidfd, root, 0);
                    try {
                        c.fchown(own, -1, -1); // changes nothing; binds the call before an exec needs it
                        isPipe(own); // and the check's classes
                        return true;
                    } finally {
                        c.close(own);
                    }
                } finally {
                    c.close(pidfd);
                }
            } finally {
                c.close(root);
            }
        } catch (LastErrorException | UnsatisfiedLinkError e) {
            return false;
        }
    }
}
