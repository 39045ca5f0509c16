package ai.chalk.compute.error;

/**
 * The server has no image build with that id (or none of an image with that content hash).
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class ImageBuildNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public ImageBuildNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
