package ai.chalk.compute.evaluation.judge;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;

/**
 * A row a judge could not grade: the model's reply did not fit the grade record ({@code INVALID_ARGUMENT}), the
 * endpoint failed after its retries ({@code UNAVAILABLE}), or the row lacks a column the judge reads
 * ({@code FAILED_PRECONDITION}). An evaluation records the row as failed with this message. No message contains an
 * API key.
 */
public class JudgeException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * A judging failure.
     *
     * @param code    the kind of failure
     * @param message what went wrong, for the user
     */
    public JudgeException(Status.Code code, String message) {
        super(code, message);
    }
}
