package ai.chalk.compute.sandbox.spi;

/** A command a helper started and writes to; {@code ExecProcess} is one. */
public interface RunningCommand extends AutoCloseable {

    /**
     * Writes bytes to the command's standard input; they are copied before this returns.
     *
     * @param data the bytes
     * @throws IllegalStateException when the command no longer reads its input (it exited)
     */
    void writeStdin(byte[] data);

    /** Closes the command's standard input: it reads end of file. */
    void closeStdin();

    /**
     * Waits for the command to exit.
     *
     * @return how it ended, with the output not consumed otherwise
     */
    CommandOutcome waitFor();

    /** Kills the command if it is still running. */
    @Override
    void close();
}
