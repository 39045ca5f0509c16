package ai.chalk.compute.function;

import ai.chalk.compute.function.arrow.DecodeContext;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * A function in a {@link FunctionRegistry}, bound to the object whose method it runs: call it directly
 * with Java values, or as a worker does, with an Arrow payload in and an Arrow payload out.
 */
public final class RegisteredFunction {

    private final FunctionDefinition definition;
    private final Supplier<Object> target;
    private final FunctionPayloads payloads;
    /** The body of a function that is not a method call (an LLM judge), or null to call the method. */
    private final java.util.function.@org.jspecify.annotations.Nullable Function<Object[], Object> body;

    RegisteredFunction(FunctionDefinition definition, Supplier<Object> target, FunctionPayloads payloads) {
        this(definition, target, payloads, null);
    }

    RegisteredFunction(
            FunctionDefinition definition,
            Supplier<Object> target,
            FunctionPayloads payloads,
            java.util.function.@org.jspecify.annotations.Nullable Function<Object[], Object> body) {
        this.definition = definition;
        this.target = target;
        this.payloads = payloads;
        this.body = body;
    }

    /** What the function is and its schemas. */
    public FunctionDefinition definition() {
        return definition;
    }

    /** The codec of its Arrow payloads. */
    public FunctionPayloads payloads() {
        return payloads;
    }

    /**
     * Runs the function here, in this JVM.
     *
     * @param arguments one value per parameter, in order
     * @return what it returned
     * @throws FunctionInvocationException when the function threw; its cause is what it threw
     * @throws IllegalArgumentException    when the arguments do not match the parameters
     */
    public Object invoke(Object... arguments) {
        return invoke(-1, arguments == null ? new Object[] {null} : arguments);
    }

    /**
     * Runs the function for every call in an Arrow payload, as a worker does, with no services for
     * rebuilding handles.
     *
     * @param arguments the Arrow IPC stream of arguments
     * @return the Arrow IPC stream of results, one row per call
     * @throws ai.chalk.compute.function.arrow.ArrowPayloadException when the payload does not fit the parameters
     * @throws FunctionInvocationException when the function threw, naming the row
     */
    public byte[] call(byte[] arguments) {
        return call(arguments, DecodeContext.empty());
    }

    /**
     * Runs the function for every call in an Arrow payload, as a worker does.
     *
     * @param arguments the Arrow IPC stream of arguments
     * @param context   services for rebuilding handles passed as arguments, such as a {@code SandboxClient}
     * @return the Arrow IPC stream of results, one row per call
     * @throws ai.chalk.compute.function.arrow.ArrowPayloadException when the payload does not fit the parameters
     * @throws FunctionInvocationException when the function threw, naming the row
     */
    public byte[] call(byte[] arguments, DecodeContext context) {
        List<Object[]> calls = payloads.decodeArguments(arguments, context);
        List<Object> results = new ArrayList<>(calls.size());
        for (int row = 0; row < calls.size(); row++) {
            results.add(invoke(row, calls.get(row)));
        }
        return payloads.encodeResults(results);
    }

    private Object invoke(int row, Object[] arguments) {
        Objects.requireNonNull(arguments, "arguments");
        int expected = definition.parameters().size();
        if (arguments.length != expected) {
            throw new IllegalArgumentException(
                    definition.name() + " takes " + expected + " arguments but " + arguments.length + " were given");
        }
        if (body != null) {
            try {
                return body.apply(arguments);
            } catch (RuntimeException e) {
                throw new FunctionInvocationException(definition.name(), row, e);
            }
        }
        Object receiver = Modifier.isStatic(definition.method().getModifiers()) ? null : target.get();
        try {
            return definition.method().invoke(receiver, arguments);
        } catch (InvocationTargetException e) {
            throw new FunctionInvocationException(definition.name(), row, e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("cannot call " + definition.signature(), e);
        }
    }

    @Override
    public String toString() {
        return "RegisteredFunction[" + definition.name() + " = " + definition.signature() + "]";
    }
}
