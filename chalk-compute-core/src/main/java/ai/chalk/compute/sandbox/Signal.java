package ai.chalk.compute.sandbox;

import java.util.Optional;

/**
 * POSIX signals that can be sent to a process in a sandbox, numbered as on Linux.
 *
 * <pre>{@code
 * process.sendSignal(Signal.TERM);
 * }</pre>
 */
public enum Signal {
    /** Hangup (1). */
    HUP(1),
    /** Interrupt, as from Ctrl-C (2). */
    INT(2),
    /** Quit, as from Ctrl-\ (3). */
    QUIT(3),
    /** Kill; cannot be caught or ignored (9). */
    KILL(9),
    /** User-defined signal 1 (10). */
    USR1(10),
    /** User-defined signal 2 (12). */
    USR2(12),
    /** Polite request to terminate (15). */
    TERM(15),
    /** Continue a stopped process (18). */
    CONT(18),
    /** Stop the process; cannot be caught or ignored (19). */
    STOP(19),
    /** Terminal window size changed (28). */
    WINCH(28);

    private final int number;

    Signal(int number) {
        this.number = number;
    }

    /** The signal's number on Linux, as sent on the wire and reported in {@link ExecResult#signal()}. */
    public int number() {
        return number;
    }

    /**
     * The signal with the given Linux number.
     *
     * @param number a signal number such as 15
     * @return the signal, or empty when it is not one of these constants
     */
    public static Optional<Signal> fromNumber(int number) {
        for (Signal s : values()) {
            if (s.number == number) {
                return Optional.of(s);
            }
        }
        return Optional.empty();
    }
}
