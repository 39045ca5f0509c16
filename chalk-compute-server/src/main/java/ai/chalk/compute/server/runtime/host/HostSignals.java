package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;

/** Delivering an arbitrary signal to a host process, which Java cannot. */
public final class HostSignals {

    /** Ends a process; it cannot be caught. */
    public static final int SIGKILL = 9;
    /** Asks a process to end. */
    public static final int SIGTERM = 15;
    /** Stops a process until {@link #SIGCONT}; it cannot be caught. */
    public static final int SIGSTOP = 19;
    /** Lets a stopped process run again. */
    public static final int SIGCONT = 18;

    private HostSignals() {}

    /** Fails with {@link IllegalArgumentException} on a number that names no signal (1 to 64 do). */
    public static void requireValid(int signal) {
        if (signal <= 0 || signal > 64) {
            throw new IllegalArgumentException("no such signal: " + signal);
        }
    }

    /** Sends {@code signal} to {@code pid}; returns false when no such process exists any more. */
    public static boolean signal(long pid, int signal) {
        if (pid <= 1 || pid > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("refusing to signal pid " + pid);
        }
        try {
            LibC.INSTANCE.kill((int) pid, signal);
            return true;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == LibC.ESRCH) {
                return false;
            }
            throw new IllegalStateException("kill(" + pid + ", " + signal + ") failed: errno " + e.getErrorCode(), e);
        }
    }
}
