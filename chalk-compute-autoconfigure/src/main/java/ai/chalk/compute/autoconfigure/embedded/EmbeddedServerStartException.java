package ai.chalk.compute.autoconfigure.embedded;

/**
 * The embedded Chalk Compute server could not start; the message says why and which
 * {@code chalk.compute.*} settings it ran with. Spring Boot's failure analysis explains it at startup.
 */
public class EmbeddedServerStartException extends RuntimeException {

    private final String settings;

    /**
     * @param settings the settings in words, for example {@code chalk.compute.embedded.runtime=docker}
     * @param cause    what went wrong
     */
    public EmbeddedServerStartException(String settings, Throwable cause) {
        super("The embedded Chalk Compute server did not start (" + settings + "): " + cause.getMessage(), cause);
        this.settings = settings;
    }

    /** The settings the server was started with, in words. */
    public String settings() {
        return settings;
    }
}
