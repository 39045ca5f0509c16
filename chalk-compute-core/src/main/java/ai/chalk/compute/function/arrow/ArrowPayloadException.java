package ai.chalk.compute.function.arrow;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;

/**
 * Values could not be encoded into, or decoded from, an Arrow payload: a null where the field allows
 * none, a value of the wrong class, a number out of range, a missing column, or bytes that are not Arrow.
 * The message names the row, the column and the place inside nested values, for example
 * {@code row 3, column 'order' at order.lines[2].sku: null in a non-nullable field}.
 *
 * <p>Its {@linkplain #statusCode() status code} is {@code INVALID_ARGUMENT}: the same values fail again.
 */
public class ArrowPayloadException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what failed and where
     * @param cause   the underlying exception, or {@code null}
     */
    public ArrowPayloadException(String message, Throwable cause) {
        super(Status.Code.INVALID_ARGUMENT, message, cause);
    }

    /**
     * Creates the exception.
     *
     * @param message what failed and where
     */
    public ArrowPayloadException(String message) {
        this(message, null);
    }

    /** What failed and where, without the status code: payload problems are found here, not by a server. */
    @Override
    public String getMessage() {
        return serverMessage();
    }
}
