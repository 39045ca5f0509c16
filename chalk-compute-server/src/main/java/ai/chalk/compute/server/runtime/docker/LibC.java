package ai.chalk.compute.server.runtime.docker;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;

/** Delivering an arbitrary signal to a host process, which Java cannot (a copy of the local runtime's). */
interface LibC extends Library {

    LibC INSTANCE = Native.load("c", LibC.class);

    int ESRCH = 3;

    int kill(int pid, int signal) throws LastErrorException;

    /** Sends {@code signal} to {@code pid}; returns false when no such process exists any more. */
    static boolean signal(long pid, int signal) {
        if (pid <= 1 || pid > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("refusing to signal pid " + pid);
        }
        try {
            INSTANCE.kill((int) pid, signal);
            return true;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == ESRCH) {
                return false;
            }
            throw new IllegalStateException("kill(" + pid + ", " + signal + ") failed: errno " + e.getErrorCode(), e);
        }
    }
}
