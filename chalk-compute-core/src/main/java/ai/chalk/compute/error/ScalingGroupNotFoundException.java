package ai.chalk.compute.error;

/**
 * The server has no scaling group with that id, or the group has no revision with that id: from
 * {@code ScalingGroup.fromId}, and from a {@code ScalingGroup}'s operations once the group has been deleted.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class ScalingGroupNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public ScalingGroupNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
