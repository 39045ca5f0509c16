package ai.chalk.compute.server.store;

/** The embedded database failed; {@link #kind()} says how, for the status a client gets. */
public class StoreException extends RuntimeException {

    /** How the database failed. */
    public enum Kind {
        /** The data directory's file system is full: nothing can be recorded until space is freed. */
        DISK_FULL,
        /** The database cannot be used right now (it closed itself, I/O fails); the server keeps retrying. */
        UNAVAILABLE,
        /** A statement failed while the database works: a server bug. */
        FAILED
    }

    private final Kind kind;

    public StoreException(String message, Throwable cause) {
        this(message, Kind.FAILED, cause);
    }

    public StoreException(String message, Kind kind, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }
}
