package ai.chalk.compute.function;

import ai.chalk.compute.error.ChalkComputeException;
import io.grpc.Status;

/**
 * A registered function's own code threw while running a call; the exception it threw is the
 * {@linkplain #getCause() cause}. Its {@linkplain #statusCode() status code} is {@code UNKNOWN}.
 */
public class FunctionInvocationException extends ChalkComputeException {

    private static final long serialVersionUID = 1L;

    private final String functionName;

    /**
     * Creates the exception.
     *
     * @param functionName the function that threw
     * @param row          the row of the call's batch it was running, or {@code -1} for a direct call
     * @param cause        what it threw
     */
    public FunctionInvocationException(String functionName, int row, Throwable cause) {
        super(
                Status.Code.UNKNOWN,
                "function '" + functionName + "' threw " + cause + (row >= 0 ? " on row " + row : ""),
                cause);
        this.functionName = functionName;
    }

    /** The function that threw. */
    public String functionName() {
        return functionName;
    }

    /** What went wrong, without the status code. */
    @Override
    public String getMessage() {
        return serverMessage();
    }
}
