package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * The request is well formed but the target is not in a state that allows it, for example an exec in a sandbox that has been terminated, or a feature the server cannot provide.
 *
 * <p>Reported with gRPC status {@code FAILED_PRECONDITION}.
 */
public class FailedPreconditionException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code FAILED_PRECONDITION}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public FailedPreconditionException(String serverMessage, Throwable cause) {
        super(Status.Code.FAILED_PRECONDITION, serverMessage, cause);
    }

    /**
     * Creates the exception for a failure reported with status {@code FAILED_PRECONDITION}.
     *
     * @param serverMessage the message the server sent
     */
    public FailedPreconditionException(String serverMessage) {
        this(serverMessage, null);
    }
}
