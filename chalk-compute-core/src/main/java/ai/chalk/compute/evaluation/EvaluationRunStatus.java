package ai.chalk.compute.evaluation;

/**
 * Where an evaluation run stands. A run moves {@code PENDING → RUNNING → FINALIZING} and ends {@code SUCCEEDED},
 * {@code FAILED} or {@code CANCELED}.
 */
public enum EvaluationRunStatus {
    /** Created, not started yet. */
    PENDING,
    /** Its rows are going through the task and the scorers. */
    RUNNING,
    /** Every row is scored; the result dataset and the score summary are being written. */
    FINALIZING,
    /** Done: its result dataset and score summary are there to read. */
    SUCCEEDED,
    /** The task could not run at all, or the run was interrupted; {@link EvaluationRun#errorMessage()} says why. */
    FAILED,
    /** Canceled before it ended. */
    CANCELED,
    /** A status this client does not know, from a newer server. */
    UNKNOWN;

    /**
     * Whether the run has ended and will not change again.
     *
     * @return {@code true} for {@link #SUCCEEDED}, {@link #FAILED} and {@link #CANCELED}
     */
    public boolean isTerminal() {
        return this == SUCCEEDED || this == FAILED || this == CANCELED;
    }

    static EvaluationRunStatus of(ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus status) {
        return switch (status) {
            case EVALUATION_RUN_STATUS_PENDING -> PENDING;
            case EVALUATION_RUN_STATUS_RUNNING -> RUNNING;
            case EVALUATION_RUN_STATUS_FINALIZING -> FINALIZING;
            case EVALUATION_RUN_STATUS_SUCCEEDED -> SUCCEEDED;
            case EVALUATION_RUN_STATUS_FAILED -> FAILED;
            case EVALUATION_RUN_STATUS_CANCELED -> CANCELED;
            default -> UNKNOWN;
        };
    }
}
