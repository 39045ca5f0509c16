package ai.chalk.compute.function.remote;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * A deployed function whose results come back as one Java type, so that a call needs no cast:
 * <pre>{@code
 * TypedFunction<Long> sum = RemoteFunction.fromName(client, "sum", Long.class);
 * long total = sum.call(2L, 40L);
 * }</pre>
 * Results travel in their generic Java form ({@link RemoteFunction#fromName(ai.chalk.compute.sandbox.SandboxClient,
 * String)}) and are then converted: a number becomes a number of the asked width when it fits ({@code Integer} for an
 * {@code int64} result of 42), anything else must already be of the type. Thread-safe.
 *
 * @param <R> the result type
 */
public final class TypedFunction<R> {

    private final RemoteFunction function;
    private final Class<R> resultType;

    TypedFunction(RemoteFunction function, Class<R> resultType) {
        this.function = Objects.requireNonNull(function, "function");
        this.resultType = Objects.requireNonNull(resultType, "resultType");
    }

    /** The untyped function underneath, for its versions and lifecycle. */
    public RemoteFunction untyped() {
        return function;
    }

    /** The type its results come back as. */
    public Class<R> resultType() {
        return resultType;
    }

    /**
     * Calls the function once; see {@link RemoteFunction#call(Object...)}.
     *
     * @param arguments one value per parameter; trailing parameters with defaults may be left out
     * @return the result
     * @throws ClassCastException                                 when the result is not of the result type
     * @throws ai.chalk.compute.error.RemoteExecutionException when the function threw
     */
    public R call(Object... arguments) {
        return Results.as(function.call(arguments), resultType, function.name());
    }

    /**
     * Calls the function for several sets of arguments in one request; see {@link RemoteFunction#callBatch(List)}.
     *
     * @param calls one array of arguments per call
     * @return one result per call, in order
     */
    public List<R> callBatch(List<Object[]> calls) {
        return function.callBatch(calls).stream()
                .map(r -> Results.as(r, resultType, function.name()))
                .toList();
    }

    /**
     * Queues a call; see {@link RemoteFunction#callAsync(Object...)}.
     *
     * @param arguments one value per parameter
     * @return the result once the call ended
     */
    public CompletableFuture<R> callAsync(Object... arguments) {
        return function.callAsync(arguments).thenApply(r -> Results.as(r, resultType, function.name()));
    }

    @Override
    public String toString() {
        return function + " -> " + resultType.getSimpleName();
    }
}
