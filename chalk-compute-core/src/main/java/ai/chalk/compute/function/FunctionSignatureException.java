package ai.chalk.compute.function;

/**
 * A function's parameters or return value cannot travel: a type with no Arrow mapping, parameter names
 * missing from the class file, a default that is not a value of its parameter's type, a scorer that
 * returns something other than a score. The message names the method and the exact parameter:
 * <pre>
 * com.acme.Fns.score(String text, Object x): parameter 'x' has type Object, which has no Arrow mapping; use ...
 * </pre>
 * Chalk's Python SDK raises {@code FunctionSignatureError} for the same mistakes.
 */
public class FunctionSignatureException extends FunctionDefinitionException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what is wrong, starting with the method
     * @param cause   the underlying exception, or {@code null}
     */
    public FunctionSignatureException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * Creates the exception.
     *
     * @param message what is wrong, starting with the method
     */
    public FunctionSignatureException(String message) {
        this(message, null);
    }
}
