package ai.chalk.compute.sandbox.spi;

import java.util.OptionalInt;
import java.util.function.Consumer;

/**
 * Where a helper built on exec runs its commands: one running sandbox. {@code Sandbox} implements it for the helpers
 * it hands out; a helper never needs more of a sandbox than this.
 */
public interface ExecTarget {

    /**
     * Runs a command to its end.
     *
     * @param command the command
     * @return how it ended, with everything it wrote; a non-zero exit is a result
     * @throws RuntimeException a {@link TimedOutCommand} (the sandbox's own timeout exception) when the command's
     *                          time limit ran out, or the sandbox's exception when it cannot run the command
     */
    CommandOutcome run(CommandLine command);

    /**
     * Starts a command whose standard input the caller writes.
     *
     * @param command the command
     * @return the running command; close it to kill it if it is still running
     */
    RunningCommand start(CommandLine command);

    /**
     * Runs a command, handing its output to the caller as it comes, so that memory use does not depend on its size.
     *
     * @param command the command
     * @param stdout  receives each chunk of standard output, in order
     * @param stderr  receives each chunk of standard error, in order
     * @return the exit status, or empty when the command ended without reporting one
     */
    OptionalInt stream(CommandLine command, Consumer<byte[]> stdout, Consumer<byte[]> stderr);
}
