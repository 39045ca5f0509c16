package ai.chalk.compute.function.arrow;

/**
 * The Arrow metadata keys that Chalk's function catalog reads, and the ones this SDK adds for Java.
 *
 * <p>Schema-level keys sit on a function's output schema; field-level keys on the field they describe.
 * Catalog clients in any language can use them without loading the function's code.
 */
public final class ChalkMetadata {

    /** Output-schema metadata: the function's description, as Python functions publish their docstring. */
    public static final String FUNCTION_DESCRIPTION = "chalk.function.description";

    /** Output-schema metadata: {@code "false"} for Java functions, which return one result per call. */
    public static final String FUNCTION_IS_GENERATOR = "chalk.function.is_generator";

    /** Input-field metadata: the parameter's default value as JSON, filled in when a call omits the column. */
    public static final String DEFAULT = "chalk.default";

    /**
     * Field metadata naming the Python type of a custom object, for example {@code chalkcompute.Sandbox};
     * set on types that Chalk's Python SDK also knows, so Python callers rebuild them too.
     */
    public static final String PYTHON_TYPE = "chalk.python.type";

    /** Field metadata naming the Java class of an enum, a record or a custom type, for example {@code com.acme.Order}. */
    public static final String JAVA_TYPE = "chalk.java.type";

    /** Field metadata of an enum field: its constants in declaration order, as a JSON array of strings. */
    public static final String ENUM_CONSTANTS = "chalk.java.enum_constants";

    private ChalkMetadata() {}
}
