package ai.chalk.compute.files;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;
import java.util.Objects;

/**
 * A file operation in a sandbox failed. The subclasses name the failures a caller can act on
 * ({@link FileNotFoundInSandboxException}, {@link FileAccessDeniedException},
 * {@link WrongFileTypeException}, {@link FileTransferException}); this class itself reports the rest,
 * for example removing a directory that is not empty without {@code recursive}.
 *
 * <pre>{@code
 * try {
 *     String config = sandbox.files().readText("/app/config.yml");
 * } catch (FileNotFoundInSandboxException e) {
 *     // use the defaults
 * }
 * }</pre>
 *
 * <p>The message names the operation, the path and the reason; {@link #stderr()} holds what the
 * command that failed in the sandbox printed.
 */
public class SandboxFileException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    private final String operation;
    private final String path;
    private final String reason;
    private final String stderr;

    /**
     * Creates the exception.
     *
     * @param code      the gRPC status code that best describes the failure
     * @param operation what was being done, for example {@code "read"}
     * @param path      the path it was done to, as the caller gave it
     * @param reason    why it failed, for people
     * @param stderr    what the failed command printed on standard error, or an empty string
     */
    public SandboxFileException(Status.Code code, String operation, String path, String reason, String stderr) {
        super(code, "cannot " + operation + " " + FilePaths.quote(path) + ": " + reason);
        this.operation = Objects.requireNonNull(operation, "operation");
        this.path = Objects.requireNonNull(path, "path");
        this.reason = Objects.requireNonNull(reason, "reason");
        this.stderr = stderr == null ? "" : stderr;
    }

    /** What was being done, for example {@code "read"} or {@code "upload to"}. */
    public String operation() {
        return operation;
    }

    /** The path in the sandbox the operation failed on, exactly as the caller gave it. */
    public String path() {
        return path;
    }

    /** Why it failed, for example {@code "no such file or directory"}. */
    public String reason() {
        return reason;
    }

    /** What the command that failed in the sandbox wrote to standard error (empty when nothing). */
    public String stderr() {
        return stderr;
    }
}
