package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * The server does not know the sandbox (or other resource) a call named, or it has been removed.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class SandboxNotFoundException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public SandboxNotFoundException(String serverMessage, Throwable cause) {
        super(Status.Code.NOT_FOUND, serverMessage, cause);
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
