package ai.chalk.compute.function.worker;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One function a worker serves: its registered name and the method that implements it, as written in
 * {@code CHALK_WORKER_FUNCTIONS} ({@code name=fully.qualified.Class#method}).
 *
 * @param name       the registered name callers use
 * @param className  the fully qualified name of the class declaring the method
 * @param methodName the method's name
 */
public record FunctionBinding(String name, String className, String methodName) {

    /** Checks that no part is blank. */
    public FunctionBinding {
        requireText(name, "name");
        requireText(className, "className");
        requireText(methodName, "methodName");
    }

    /**
     * Parses a {@code ,}-separated list of {@code name=fully.qualified.Class#method} entries.
     *
     * @param text the list, as in {@code CHALK_WORKER_FUNCTIONS}
     * @return the bindings, in order
     * @throws IllegalArgumentException when the list is empty or an entry is malformed, naming the entry
     */
    public static List<FunctionBinding> parseList(String text) {
        List<FunctionBinding> bindings = new ArrayList<>();
        for (String entry : (text == null ? "" : text).split(",")) {
            if (!entry.isBlank()) {
                bindings.add(parse(entry.trim()));
            }
        }
        if (bindings.isEmpty()) {
            throw new IllegalArgumentException(
                    "no functions given: expected name=fully.qualified.Class#method entries" + " separated by ','");
        }
        return List.copyOf(bindings);
    }

    /**
     * Parses one {@code name=fully.qualified.Class#method} entry.
     *
     * @param entry the entry
     * @return the binding
     * @throws IllegalArgumentException when the entry is malformed
     */
    public static FunctionBinding parse(String entry) {
        int eq = entry.indexOf('=');
        int hash = entry.lastIndexOf('#');
        if (eq <= 0 || hash < eq + 2 || hash == entry.length() - 1) {
            throw new IllegalArgumentException("'" + entry + "' is not name=fully.qualified.Class#method");
        }
        return new FunctionBinding(entry.substring(0, eq), entry.substring(eq + 1, hash), entry.substring(hash + 1));
    }

    /** The entry as written in {@code CHALK_WORKER_FUNCTIONS}. */
    @Override
    public String toString() {
        return name + "=" + className + "#" + methodName;
    }

    private static void requireText(String value, String what) {
        if (Objects.requireNonNull(value, what).isBlank()) {
            throw new IllegalArgumentException(what + " is blank");
        }
    }
}
