package ai.chalk.compute.files;

import io.grpc.Status;

/**
 * The sandbox refused access to the path: its permissions do not allow the operation, or it is on a
 * read-only file system (such as an image's {@code /usr}). Reported with status
 * {@code PERMISSION_DENIED}; {@link #reason()} says which.
 */
public class FileAccessDeniedException extends SandboxFileException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation what was being done
     * @param path      the path access to which was refused
     * @param reason    {@code "permission denied"}, {@code "read-only file system"} or similar
     * @param stderr    what the failed command printed
     */
    public FileAccessDeniedException(String operation, String path, String reason, String stderr) {
        super(Status.Code.PERMISSION_DENIED, operation, path, reason, stderr);
    }
}
