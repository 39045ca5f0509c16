package ai.chalk.compute.sql;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;
import java.time.Duration;

/**
 * {@link SqlJob#await} waited as long as it was told and the job had not finished. The job goes on running on the
 * server: wait again, or resume later with {@link SQLClient#getJob} and its query id.
 */
public class SqlJobTimeoutException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    private final String queryId;

    /**
     * Creates the exception for a wait that ended before the job.
     *
     * @param queryId the job's query id
     * @param waited  how long the caller waited
     */
    public SqlJobTimeoutException(String queryId, Duration waited) {
        super(
                Status.Code.DEADLINE_EXCEEDED,
                "SQL query " + queryId + " had not finished after " + waited
                        + "; it is still running: wait again, or resume with SQLClient.getJob(\"" + queryId + "\")");
        this.queryId = queryId;
    }

    /** The job's query id. */
    public String queryId() {
        return queryId;
    }
}
