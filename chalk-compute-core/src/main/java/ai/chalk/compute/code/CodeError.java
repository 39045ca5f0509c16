package ai.chalk.compute.code;

/**
 * The error that ended a snippet, as code_sandboxes' {@code CodeError}.
 *
 * @param name      the exception's type ({@code ZeroDivisionError}, {@code java.lang.ArithmeticException})
 * @param value     its message
 * @param traceback the traceback or stack trace, as the language prints it
 */
public record CodeError(String name, String value, String traceback) {

    @Override
    public String toString() {
        return value.isEmpty() ? name : name + ": " + value;
    }
}
