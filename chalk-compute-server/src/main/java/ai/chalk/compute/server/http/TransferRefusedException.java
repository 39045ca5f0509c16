package ai.chalk.compute.server.http;

/**
 * A transfer the server will not carry out: the HTTP status and a message for the client (a sentence it can act on).
 */
public final class TransferRefusedException extends Exception {

    private final int status;

    /** Refuses with {@code status} (e.g. 404, 409, 413) and {@code message}. */
    public TransferRefusedException(int status, String message) {
        super(message);
        this.status = status;
    }

    /** The HTTP status the client gets. */
    public int status() {
        return status;
    }
}
