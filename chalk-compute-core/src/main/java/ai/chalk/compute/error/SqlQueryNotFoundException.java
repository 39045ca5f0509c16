package ai.chalk.compute.error;

/**
 * The server knows no SQL query with the id {@code SQLClient.getJob} was given in the client's environment (another
 * environment's queries are not shown).
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class SqlQueryNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public SqlQueryNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
