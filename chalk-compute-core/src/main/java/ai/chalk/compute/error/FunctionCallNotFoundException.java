package ai.chalk.compute.error;

/**
 * The server no longer knows a queued function call whose result {@code RemoteFunction.callAsync} was waiting for,
 * because the call was purged from the queue or its result was already read by another poller. The future
 * {@code callAsync} returned fails with it.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class FunctionCallNotFoundException extends NotFoundException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public FunctionCallNotFoundException(String serverMessage, Throwable cause) {
        super(serverMessage, cause);
    }
}
