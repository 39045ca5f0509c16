package ai.chalk.compute.sandbox;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;

/**
 * A command printed more than {@link Sandbox#exec(Command)} collects in memory: its
 * {@linkplain Command#outputLimit(long) output limit}, stdout and stderr together (32 MiB unless
 * set). The command was killed. Read output of any size as it comes with
 * {@link Sandbox#execStream(Command)}, or raise the limit for the command.
 *
 * <pre>{@code
 * try (ExecStream events = sandbox.execStream(Command.of("cat", "/data/huge.csv"))) {
 *     for (ExecEvent event : events) {
 *         if (event instanceof ExecEvent.Stdout out) sink.write(out.data());
 *     }
 * }
 * }</pre>
 */
public class ExecOutputLimitException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    private final long limitBytes;

    /**
     * Creates the exception.
     *
     * @param command    the command, as its program's name
     * @param sandboxId  the sandbox it ran in
     * @param limitBytes the limit it went over
     */
    public ExecOutputLimitException(String command, String sandboxId, long limitBytes) {
        super(
                Status.Code.RESOURCE_EXHAUSTED,
                "the output of " + command + " in sandbox " + sandboxId + " went over " + describe(limitBytes)
                        + ", the most exec collects in memory, so the command was killed; use execStream to read"
                        + " output of any size as it comes, or raise the limit with Command.outputLimit(bytes)");
        this.limitBytes = limitBytes;
    }

    /** The limit the output went over, in bytes. */
    public long limitBytes() {
        return limitBytes;
    }

    private static String describe(long bytes) {
        if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0) {
            return bytes + " bytes (" + bytes / (1024 * 1024) + " MiB)";
        }
        return bytes + " bytes";
    }
}
