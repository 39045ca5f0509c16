package ai.chalk.compute.server.sql;

/** A query that could not run or failed, with DuckDB's message and what the caller can do. */
public final class SqlFailure extends RuntimeException {

    /** Why, which decides the status a client sees. */
    public enum Reason {
        /** The SQL is not one query, does not parse or does not bind (INVALID_ARGUMENT). */
        INVALID,
        /** The query reached for something other than its environment's datasets (PERMISSION_DENIED). */
        FORBIDDEN,
        /**
         * The result or the memory it needs is larger than allowed, or the result than the server's disk has room for
         * (RESOURCE_EXHAUSTED).
         */
        TOO_LARGE,
        /** The query was canceled before it finished (CANCELLED). */
        CANCELED,
        /** The query ran past the server's time limit for one query (DEADLINE_EXCEEDED). */
        TIMED_OUT,
        /** Anything else that went wrong while it ran (INTERNAL). */
        FAILED
    }

    private final Reason reason;

    public SqlFailure(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public SqlFailure(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    /** Why the query failed. */
    public Reason reason() {
        return reason;
    }
}
