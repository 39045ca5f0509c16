package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * The server rejected a request as malformed: an empty command, an unparseable memory limit, a value out of range. The message names the offending field; the request will not succeed if repeated unchanged.
 *
 * <p>Reported with gRPC status {@code INVALID_ARGUMENT}.
 */
public class InvalidRequestException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code INVALID_ARGUMENT}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public InvalidRequestException(String serverMessage, Throwable cause) {
        super(Status.Code.INVALID_ARGUMENT, serverMessage, cause);
    }

    /**
     * Creates the exception for a failure reported with status {@code INVALID_ARGUMENT}.
     *
     * @param serverMessage the message the server sent
     */
    public InvalidRequestException(String serverMessage) {
        this(serverMessage, null);
    }
}
