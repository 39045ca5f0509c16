package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * The server has no volume of that name, or no file at that path in it.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class VolumeNotFoundException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public VolumeNotFoundException(String serverMessage, Throwable cause) {
        super(Status.Code.NOT_FOUND, serverMessage, cause);
    }
}
