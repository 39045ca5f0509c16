package ai.chalk.compute.server.python;

import java.io.IOException;

/** The driver's output broke the protocol: the snippet wrote over it, or the driver is not ours. */
final class DriverProtocolException extends IOException {

    DriverProtocolException(String message) {
        super(message);
    }
}
