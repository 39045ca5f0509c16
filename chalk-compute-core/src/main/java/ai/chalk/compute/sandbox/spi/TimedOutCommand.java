package ai.chalk.compute.sandbox.spi;

/**
 * The exception a command whose time limit ran out throws ({@code ExecTimeoutException} is one), as a helper that
 * turns it into its own reads it: with what the command wrote before it was killed.
 */
public interface TimedOutCommand {

    /** What the command wrote before it was killed, and how it ended (usually exit code 137). */
    CommandOutcome partialResult();
}
