package ai.chalk.compute.function.arrow;

import java.lang.reflect.Type;
import java.util.Objects;

/**
 * A Java type has no Arrow mapping, so values of it cannot be function arguments or results.
 *
 * <p>{@link #path()} tells where inside the declared type the problem is, empty for the type itself:
 * {@code .name} is a record component, {@code []} a list element, {@code {key}} and {@code {value}} a
 * map's keys and values, {@code ?} an optional's content. {@link #hint()} says what to use instead.
 */
public class UnsupportedJavaTypeException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String path;
    private final transient Type unsupportedType;
    private final String hint;

    /**
     * Creates the exception.
     *
     * @param path            where the unsupported type sits inside the declared type; empty for the type itself
     * @param unsupportedType the type without a mapping
     * @param hint            what to use instead, starting with a verb ("use String")
     */
    public UnsupportedJavaTypeException(String path, Type unsupportedType, String hint) {
        super("type " + TypeNames.simple(unsupportedType) + (path.isEmpty() ? "" : " at " + path)
                + " has no Arrow mapping; " + hint);
        this.path = Objects.requireNonNull(path, "path");
        this.unsupportedType = unsupportedType;
        this.hint = Objects.requireNonNull(hint, "hint");
    }

    /** Where the unsupported type sits inside the declared type, for example {@code .tags[]}; empty for the type itself. */
    public String path() {
        return path;
    }

    /** The type that has no mapping. */
    public Type unsupportedType() {
        return unsupportedType;
    }

    /** What to use instead, for example {@code "use String"}. */
    public String hint() {
        return hint;
    }
}
