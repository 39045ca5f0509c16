package ai.chalk.compute.server.runtime;

/** A runtime could not start a sandbox; the message is shown to the user as it is. */
public class RuntimeStartException extends Exception {
    public RuntimeStartException(String message) {
        super(message);
    }

    public RuntimeStartException(String message, Throwable cause) {
        super(message, cause);
    }

    /** A start refused because the runtime runs {@code max} sandboxes already, as many as it may. */
    public static RuntimeStartException full(int max) {
        return new RuntimeStartException("this server runs at most " + max + " sandboxes at once and all are in use:"
                + " terminate one first, or start the server with a higher limit");
    }
}
