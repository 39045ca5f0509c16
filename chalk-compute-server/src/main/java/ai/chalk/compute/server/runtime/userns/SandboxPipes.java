package ai.chalk.compute.server.runtime.userns;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives the pipes a sandbox's command runs on, its standard streams, which the server made as host root, to the
 * sandbox's root, so that the command can open them again by name: {@code echo x > /dev/stderr} opens
 * {@code /proc/self/fd/2}, which for a pipe checks the pipe's owner, and with an owner outside the sandbox's ids every
 * such redirection said "Permission denied" (a container runtime gives its stdio pipes to the container's root the
 * same way).
 *
 * <p>Each descriptor is taken from the host process that starts the command ({@code pidfd_getfd}), which nothing in
 * the sandbox can reach, and changed only when it is a pipe: the server changes the object it checked. While that
 * process joins the sandbox's cgroups, its stdout is a {@code cgroup.procs} file (the joining shell's
 * {@code echo $$ > ...}, milliseconds on a busy host), which must never go to the sandbox; it is looked at again until
 * it is the pipe. What the sandbox gains is its own streams, which it could read and write already. Needs Linux 5.6
 * ({@link #works}); elsewhere, or once the process has ended, nothing changes.
 */
public final class SandboxPipes {

    private static final Logger log = LoggerFactory.getLogger(SandboxPipes.class);

    /** The errors that say the calls cannot work here: ENOSYS, EPERM, EACCES. */
    private static final java.util.Set<Integer> REFUSED = java.util.Set.of(38, 1, 13);

    /** How often, and how far apart, a descriptor that is not a pipe yet is looked at: 200 ms in all. */
    private static final int LOOKS = 400;

    private static final long LOOK_AGAIN_NANOS = 500_000;

    /** The probe's answer, false once a call is refused (see {@link #REFUSED}). */
    private static volatile boolean works = probe();

    private SandboxPipes() {}

    /**
     * Whether the calls work here, so that an exec may wait for its pipes to be its own (see
     * {@code SandboxCommands.AWAIT_PIPES}). Reading it first, as a runtime starts, readies the calls.
     */
    public static boolean works() {
        return works;
    }

    /**
     * Gives descriptors 0, 1 and 2 of {@code process}, which are pipes once it has joined its cgroups, to the first id
     * of {@code ids}.
     *
     * @return whether all three were given (false when the process ended, a call failed, or one never became a pipe)
     */
    public static boolean giveTo(Process process, IdRange ids) {
        if (!works) {
            return false;
        }
        IdMapCalls c = IdMapCalls.INSTANCE;
        int pidfd;
        try {
            pidfd = c.pidfd_open((int) process.pid(), 0);
        } catch (LastErrorException e) {
            return failed(e);
        }
        try {
            if (!process.isAlive()) {
                return false; // its pid may be another process's by now
            }
            boolean all = true;
            for (int fd = 0; fd <= 2; fd++) {
                all &= give(pidfd, fd, (int) ids.first());
            }
            return all;
        } catch (RuntimeException e) {
            return false;
        } finally {
            closeQuietly(pidfd);
        }
    }

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
                closeQuietly(own);
            }
            LockSupport.parkNanos(LOOK_AGAIN_NANOS);
        }
        return false;
    }

    private static boolean failed(LastErrorException e) {
        if (REFUSED.contains(e.getErrorCode()) && works) {
            works = false; // no exec waits any more for what will not come
            log.warn(
                    "Commands in sandboxes cannot open their own standard streams by name (/dev/stdout): taking a"
                            + " process's descriptors is refused here (errno {})",
                    e.getErrorCode());
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

    private static void closeQuietly(int fd) {
        try {
            IdMapCalls.INSTANCE.close(fd);
        } catch (LastErrorException e) {
            // nothing to do
        }
    }

    /** Takes a pipe of this process's own from itself and gives it to its owner: every call, as an exec makes them. */
    private static boolean probe() {
        IdMapCalls c;
        int[] pipe = new int[2];
        try {
            c = IdMapCalls.INSTANCE;
            c.pipe2(pipe, IdMapCalls.O_CLOEXEC);
        } catch (LastErrorException | UnsatisfiedLinkError e) {
            return false;
        }
        try {
            int pidfd = c.pidfd_open((int) ProcessHandle.current().pid(), 0);
            try {
                int own = c.pidfd_getfd(pidfd, pipe[1], 0);
                try {
                    c.fchown(own, -1, -1); // changes nothing
                    return isPipe(own);
                } finally {
                    closeQuietly(own);
                }
            } finally {
                closeQuietly(pidfd);
            }
        } catch (LastErrorException | UnsatisfiedLinkError e) {
            return false;
        } finally {
            closeQuietly(pipe[0]);
            closeQuietly(pipe[1]);
        }
    }
}
