package ai.chalk.compute.server.evaluation.scorer;

/**
 * A row a scorer cannot score (a column it reads is missing or null, a reference that is not what the scorer
 * compares against): the run records the row as failed with this message and goes on with the next.
 */
public final class RowScoringException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * A row failure.
     *
     * @param message what is wrong with the row, naming the column
     */
    public RowScoringException(String message) {
        super(message);
    }

    /**
     * A row failure with its cause.
     *
     * @param message what is wrong with the row
     * @param cause   the underlying failure
     */
    public RowScoringException(String message, Throwable cause) {
        super(message, cause);
    }
}
