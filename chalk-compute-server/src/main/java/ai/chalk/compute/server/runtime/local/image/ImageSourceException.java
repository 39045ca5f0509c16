package ai.chalk.compute.server.runtime.local.image;

import java.io.IOException;

/** An image that cannot be read as asked: missing, ambiguous, or in a form the local runtime does not unpack. */
public final class ImageSourceException extends IOException {

    public ImageSourceException(String message) {
        super(message);
    }
}
