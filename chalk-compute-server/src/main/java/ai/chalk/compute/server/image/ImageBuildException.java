package ai.chalk.compute.server.image;

/** A build that failed: the message names the step that failed and why, in words a user can act on. */
public final class ImageBuildException extends Exception {

    public ImageBuildException(String message) {
        super(message);
    }

    public ImageBuildException(String message, Throwable cause) {
        super(message, cause);
    }
}
