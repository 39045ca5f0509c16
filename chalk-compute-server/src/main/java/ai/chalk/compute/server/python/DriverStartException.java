package ai.chalk.compute.server.python;

/** The sandbox could not start the driver; the message tells the user why. */
final class DriverStartException extends Exception {

    DriverStartException(String message) {
        super(message);
    }
}
