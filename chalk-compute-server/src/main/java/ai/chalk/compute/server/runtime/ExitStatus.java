package ai.chalk.compute.server.runtime;

import java.util.OptionalInt;

/**
 * How a process ended: exactly one of an exit code or a terminating signal is present.
 *
 * @param exitCode the exit code when the process exited by itself
 * @param signal   the signal number when a signal ended it
 */
public record ExitStatus(OptionalInt exitCode, OptionalInt signal) {

    public static ExitStatus exited(int code) {
        return new ExitStatus(OptionalInt.of(code), OptionalInt.empty());
    }

    public static ExitStatus signalled(int signal) {
        return new ExitStatus(OptionalInt.empty(), OptionalInt.of(signal));
    }
}
