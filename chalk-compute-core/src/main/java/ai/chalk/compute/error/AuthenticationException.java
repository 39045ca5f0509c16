package ai.chalk.compute.error;

import io.grpc.Status;

/**
 * The server did not accept the caller's credentials ({@code UNAUTHENTICATED}) or they do not
 * grant the operation ({@code PERMISSION_DENIED}). Check the token or client credentials in use.
 */
public class AuthenticationException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param statusCode    {@code UNAUTHENTICATED} or {@code PERMISSION_DENIED}
     * @param serverMessage the message the server sent
     * @param cause         the underlying exception, or {@code null}
     */
    public AuthenticationException(Status.Code statusCode, String serverMessage, Throwable cause) {
        super(statusCode, serverMessage, cause);
        if (statusCode != Status.Code.UNAUTHENTICATED && statusCode != Status.Code.PERMISSION_DENIED) {
            throw new IllegalArgumentException("not an authentication status: " + statusCode);
        }
    }
}
