package ai.chalk.compute.files;

import io.grpc.Status;

/**
 * The path does not exist in the sandbox, or one of its parent directories does not. Reported with
 * status {@code NOT_FOUND}; {@link #path()} is the missing path.
 */
public class FileNotFoundInSandboxException extends SandboxFileException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param operation what was being done
     * @param path      the missing path
     * @param stderr    what the failed command printed
     */
    public FileNotFoundInSandboxException(String operation, String path, String stderr) {
        super(Status.Code.NOT_FOUND, operation, path, "no such file or directory", stderr);
    }
}
