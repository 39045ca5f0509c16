package ai.chalk.compute.sql;

/** Where a SQL job is, as the server reports it. */
public enum SqlJobStatus {
    /** Queued or running: the server reports them as one state. */
    RUNNING,
    /** Finished; its result can be read or downloaded. */
    SUCCEEDED,
    /** Refused, failed or canceled (a server restart cancels the jobs it was running). */
    FAILED
}
