package ai.chalk.compute.sandbox;

import ai.chalk.compute.error.DeadlineExceededException;

/**
 * A command ran longer than its {@link Command#timeout(java.time.Duration) timeout}: the server
 * killed it and every process it started. What it printed until then is kept in
 * {@link #partialResult()}.
 *
 * <pre>{@code
 * try {
 *     sandbox.exec(Command.of("make").timeout(Duration.ofMinutes(5)));
 * } catch (ExecTimeoutException e) {
 *     System.err.println(e.partialResult().stderrText());
 * }
 * }</pre>
 */
public class ExecTimeoutException extends DeadlineExceededException
        implements ai.chalk.compute.sandbox.spi.TimedOutCommand {

    private static final long serialVersionUID = 1L;

    private final transient ExecResult partialResult;

    /**
     * Creates the exception.
     *
     * @param serverMessage the server's message
     * @param partialResult the output collected before the command was killed, and how it ended
     */
    public ExecTimeoutException(String serverMessage, ExecResult partialResult) {
        super(serverMessage);
        this.partialResult = partialResult;
    }

    /**
     * The output the command wrote before it was killed (except what was already consumed as
     * events), and how it ended — usually killed by signal 9, exit code 137.
     */
    @Override
    public ExecResult partialResult() {
        return partialResult;
    }
}
