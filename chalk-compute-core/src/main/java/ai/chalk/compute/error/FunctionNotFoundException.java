package ai.chalk.compute.error;

/**
 * The server's function catalog has no function of that name or id, or no version of it with that id: from
 * {@code RemoteFunction.fromName}, {@code fromVersionId} and calls, and from the deployer's {@code versions},
 * {@code rollback}, {@code readiness} and {@code delete}. Deploy the function first, or check its name.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class FunctionNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public FunctionNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
