package ai.chalk.compute.files;

import io.grpc.Status;

/**
 * The path exists but is the wrong kind of file for the operation: a directory where a file is
 * expected (reading or writing it), a file where a directory is expected (listing it, or creating
 * something inside it). Reported with status {@code FAILED_PRECONDITION}.
 */
public class WrongFileTypeException extends SandboxFileException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation what was being done
     * @param path      the path
     * @param reason    for example {@code "it is a directory"}
     * @param stderr    what the failed command printed
     */
    public WrongFileTypeException(String operation, String path, String reason, String stderr) {
        super(Status.Code.FAILED_PRECONDITION, operation, path, reason, stderr);
    }
}
