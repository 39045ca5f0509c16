package ai.chalk.compute.error;

/**
 * The server does not know the sandbox snapshot a call named, or it has been deleted: from {@code Snapshot} operations,
 * {@code SandboxClient#snapshot(String)}, and creating a sandbox from a snapshot.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class SnapshotNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public SnapshotNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     */
    public SnapshotNotFoundException(String serverMessage) {
        this(serverMessage, null);
    }
}
