package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * A call did not complete before its deadline.
 *
 * <p>Reported with gRPC status {@code DEADLINE_EXCEEDED}.
 */
public class DeadlineExceededException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code DEADLINE_EXCEEDED}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public DeadlineExceededException(String serverMessage, Throwable cause) {
        super(Status.Code.DEADLINE_EXCEEDED, serverMessage, cause);
    }

    /**
     * Creates the exception for a failure reported with status {@code DEADLINE_EXCEEDED}.
     *
     * @param serverMessage the message the server sent
     */
    public DeadlineExceededException(String serverMessage) {
        this(serverMessage, null);
    }
}
