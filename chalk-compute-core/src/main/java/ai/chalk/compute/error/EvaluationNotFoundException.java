package ai.chalk.compute.error;

/**
 * The server has no evaluation, evaluation run or evaluation suite of that id in the client's environment.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class EvaluationNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public EvaluationNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
