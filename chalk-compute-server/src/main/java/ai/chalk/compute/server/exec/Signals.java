package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.error.ComputeException;

/** Signal numbers as clients send them (Linux numbering). */
public final class Signals {

    private Signals() {}

    /** Returns {@code signal} if it is a valid Linux signal number, else INVALID_ARGUMENT. */
    public static int check(int signal) {
        if (signal < 1 || signal > 64) {
            throw ComputeException.invalid("signal " + signal
                    + " is not a Linux signal number (1-64), e.g. 15 for SIGTERM, 9 for SIGKILL, 2 for SIGINT");
        }
        return signal;
    }
}
