package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * The server does not know the thing a call named, or it has been removed. Each kind of thing has its own subclass,
 * so a catch says what was missing:
 * <pre>{@code
 * try {
 *     RemoteFunction.fromName(client, "score").call("text");
 * } catch (FunctionNotFoundException e) {
 *     // no function named "score" is deployed: deploy it first
 * } catch (NotFoundException e) {
 *     // something else the call needed is missing
 * }
 * }</pre>
 *
 * <p>The SDK's clients throw the subclass of the thing they asked about: {@link SandboxNotFoundException},
 * {@link VolumeNotFoundException}, {@link ImageBuildNotFoundException}, {@link FunctionNotFoundException},
 * {@link FunctionCallNotFoundException} or {@link ScalingGroupNotFoundException}. This class itself is thrown only
 * where nothing says what the call was about, as by {@link ChalkComputeException#from(Throwable)} used on a stub you
 * call yourself.
 *
 * <p>Reported with gRPC status {@code NOT_FOUND}.
 */
public class NotFoundException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public NotFoundException(String serverMessage, Throwable cause) {
        super(Status.Code.NOT_FOUND, serverMessage, cause);
    }

    /**
     * Creates the exception for a failure reported with status {@code NOT_FOUND}.
     *
     * @param serverMessage the message the server sent
     */
    public NotFoundException(String serverMessage) {
        this(serverMessage, null);
    }
}
