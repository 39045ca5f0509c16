package ai.chalk.compute.server.error;

/**
 * A request the server refuses or cannot serve, with a message the user can act on. Managers and runtimes throw it;
 * the gRPC edge ({@code grpc.StatusErrors}) turns its {@link Kind} into a status in one place, so nothing below the
 * services knows gRPC.
 */
public final class ComputeException extends RuntimeException {

    /** What kind of refusal, which decides the status a client sees. */
    public enum Kind {
        /** The thing asked about does not exist (NOT_FOUND). */
        NOT_FOUND,
        /** A thing with that name exists already (ALREADY_EXISTS). */
        ALREADY_EXISTS,
        /** The request itself is malformed or out of range (INVALID_ARGUMENT). */
        INVALID,
        /** The request is well-formed but the state of things does not allow it (FAILED_PRECONDITION). */
        REFUSED,
        /** A limit or budget is used up (RESOURCE_EXHAUSTED). */
        EXHAUSTED,
        /** A part the request needs cannot serve right now; trying later may work (UNAVAILABLE). */
        UNAVAILABLE
    }

    private final Kind kind;

    private ComputeException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    /** What kind of refusal this is. */
    public Kind kind() {
        return kind;
    }

    /** {@link Kind#NOT_FOUND}. */
    public static ComputeException notFound(String message) {
        return new ComputeException(Kind.NOT_FOUND, message, null);
    }

    /** {@link Kind#ALREADY_EXISTS}. */
    public static ComputeException alreadyExists(String message) {
        return new ComputeException(Kind.ALREADY_EXISTS, message, null);
    }

    /** {@link Kind#INVALID}. */
    public static ComputeException invalid(String message) {
        return new ComputeException(Kind.INVALID, message, null);
    }

    /** {@link Kind#REFUSED}. */
    public static ComputeException refused(String message) {
        return new ComputeException(Kind.REFUSED, message, null);
    }

    /** {@link Kind#REFUSED}, caused by {@code cause}. */
    public static ComputeException refused(String message, Throwable cause) {
        return new ComputeException(Kind.REFUSED, message, cause);
    }

    /** {@link Kind#EXHAUSTED}. */
    public static ComputeException exhausted(String message) {
        return new ComputeException(Kind.EXHAUSTED, message, null);
    }

    /** {@link Kind#UNAVAILABLE}. */
    public static ComputeException unavailable(String message) {
        return new ComputeException(Kind.UNAVAILABLE, message, null);
    }

    /** {@link Kind#UNAVAILABLE}, caused by {@code cause}. */
    public static ComputeException unavailable(String message, Throwable cause) {
        return new ComputeException(Kind.UNAVAILABLE, message, cause);
    }
}
