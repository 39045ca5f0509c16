package ai.chalk.compute.server.runtime;

/** A runtime could not start a sandbox; the message is shown to the user as it is. */
public class RuntimeStartException extends Exception {
    public RuntimeStartException(String message) {
        super(message);
    }

    public RuntimeStartException(String message, Throwable cause) {
        super(message, cause);
    }
}
