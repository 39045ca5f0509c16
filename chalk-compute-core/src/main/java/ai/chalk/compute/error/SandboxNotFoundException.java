package ai.chalk.compute.error;

/**
 * The server does not know the sandbox a call named, or it has been removed: from {@code SandboxClient#get}, and from
 * any operation on a {@code Sandbox} (exec, files, terminate) once the server no longer has it.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class SandboxNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public SandboxNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     */
    public SandboxNotFoundException(String serverMessage) {
        this(serverMessage, null);
    }
}
