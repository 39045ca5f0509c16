package ai.chalk.compute.sql;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;

/**
 * A SQL job that failed on the server (its query was refused, failed, or was canceled, including by a server restart).
 * {@link SqlJob#await} throws it with the server's message; the query id says which job.
 */
public class SqlException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    private final String queryId;

    /**
     * Creates the exception for a failed job.
     *
     * @param queryId       the job's query id
     * @param serverMessage why it failed, as the server said
     */
    public SqlException(String queryId, String serverMessage) {
        super(Status.Code.ABORTED, "SQL query " + queryId + " failed: " + serverMessage);
        this.queryId = queryId;
    }

    /** The failed job's query id. */
    public String queryId() {
        return queryId;
    }
}
