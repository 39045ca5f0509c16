package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * The server could not be reached or is shutting down. The call may succeed if retried later.
 *
 * <p>Reported with gRPC status {@code UNAVAILABLE}. When the call did not reach the server, the message names the
 * target and the cause, such as {@code UNAVAILABLE: connection refused to localhost:50051} or
 * {@code UNAVAILABLE: unknown host in compute.example:50051 (...)}: the SDK's clients put
 * {@link ai.chalk.compute.connection.ConnectionFailures} on every channel.
 */
public class ServerUnavailableException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code UNAVAILABLE}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public ServerUnavailableException(String serverMessage, Throwable cause) {
        super(Status.Code.UNAVAILABLE, serverMessage, cause);
    }

    /**
     * Creates the exception for a failure reported with status {@code UNAVAILABLE}.
     *
     * @param serverMessage the message the server sent
     */
    public ServerUnavailableException(String serverMessage) {
        this(serverMessage, null);
    }
}
