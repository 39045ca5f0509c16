package ai.chalk.compute.error;

/**
 * The server has no volume of that name, or no file at that path in it. Creating a sandbox that mounts a volume that
 * does not exist reports it too.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class VolumeNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public VolumeNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
