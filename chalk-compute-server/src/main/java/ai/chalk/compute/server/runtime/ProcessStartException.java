package ai.chalk.compute.server.runtime;

/** A process could not be started in a sandbox; the message is shown to the user as it is. */
public class ProcessStartException extends Exception {
    public ProcessStartException(String message) {
        super(message);
    }

    public ProcessStartException(String message, Throwable cause) {
        super(message, cause);
    }
}
