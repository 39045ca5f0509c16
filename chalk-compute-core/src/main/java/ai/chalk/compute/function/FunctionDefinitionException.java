package ai.chalk.compute.function;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;

/**
 * An annotated function cannot be registered: two functions share a name, an option is malformed, an
 * image factory is missing. The message starts with the method or class at fault. Its subclass
 * {@link FunctionSignatureException} reports problems with parameter and return types.
 *
 * <p>Found at registration, before anything is deployed; its {@linkplain #statusCode() status code} is
 * {@code INVALID_ARGUMENT}.
 */
public class FunctionDefinitionException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what is wrong, starting with the method or class at fault
     * @param cause   the underlying exception, or {@code null}
     */
    public FunctionDefinitionException(String message, Throwable cause) {
        super(Status.Code.INVALID_ARGUMENT, message, cause);
    }

    /**
     * Creates the exception.
     *
     * @param message what is wrong, starting with the method or class at fault
     */
    public FunctionDefinitionException(String message) {
        this(message, null);
    }

    /** What is wrong, without the status code: these problems are found in your code, not by a server. */
    @Override
    public String getMessage() {
        return serverMessage();
    }
}
