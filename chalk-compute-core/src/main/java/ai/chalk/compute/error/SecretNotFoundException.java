package ai.chalk.compute.error;

/**
 * The environment has no managed secret of that name (the message names it; it never holds a value).
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class SecretNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public SecretNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
