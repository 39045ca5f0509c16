package ai.chalk.compute.function.arrow;

import ai.chalk.compute.sandbox.SandboxClient;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What decoding may use to rebuild values that are more than data: a {@link SandboxClient} turns a
 * sandbox id back into a working {@link ai.chalk.compute.sandbox.Sandbox} handle. Decoding itself never
 * talks to a server; the rebuilt handle does on its first operation.
 * <pre>{@code
 * List<Object> results = payloads.decodeResults(bytes, DecodeContext.of(sandboxClient));
 * }</pre>
 * Immutable; {@link #with(Class, Object)} returns a new context.
 */
public final class DecodeContext {

    private static final DecodeContext EMPTY = new DecodeContext(Map.of());

    private final Map<Class<?>, Object> services;

    private DecodeContext(Map<Class<?>, Object> services) {
        this.services = services;
    }

    /** A context with nothing in it: enough for any result that is plain data. */
    public static DecodeContext empty() {
        return EMPTY;
    }

    /**
     * A context that rebuilds sandbox handles with the given client.
     *
     * @param sandboxClient the client the rebuilt handles use
     * @return the context
     */
    public static DecodeContext of(SandboxClient sandboxClient) {
        return EMPTY.with(SandboxClient.class, sandboxClient);
    }

    /**
     * A context that also holds a service of the given type, for a {@link CustomArrowType} to find.
     *
     * @param type    the type it is looked up by
     * @param service the service
     * @param <T>     its type
     * @return a new context
     */
    public <T> DecodeContext with(Class<T> type, T service) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(service, "service");
        Map<Class<?>, Object> copy = new HashMap<>(services);
        copy.put(type, service);
        return new DecodeContext(Map.copyOf(copy));
    }

    /**
     * The service of the given type, if the context holds one.
     *
     * @param type the type it was added as
     * @param <T>  its type
     * @return the service
     */
    public <T> Optional<T> find(Class<T> type) {
        return Optional.ofNullable(type.cast(services.get(type)));
    }

    /**
     * The service of the given type.
     *
     * @param type    the type it was added as
     * @param purpose what it is needed for, completing "a ... is needed to ..."
     * @param <T>     its type
     * @return the service
     * @throws IllegalArgumentException when the context holds none, naming what to pass
     */
    public <T> T require(Class<T> type, String purpose) {
        return find(type)
                .orElseThrow(() -> new IllegalArgumentException("a " + type.getSimpleName()
                        + " is needed to " + purpose
                        + ": decode with a DecodeContext that holds one (DecodeContext.empty().with("
                        + type.getSimpleName() + ".class, ...))"));
    }
}
