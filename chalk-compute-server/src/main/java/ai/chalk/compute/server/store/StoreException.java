package ai.chalk.compute.server.store;

/** The embedded database failed; the server reports it as INTERNAL. */
public class StoreException extends RuntimeException {
    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
