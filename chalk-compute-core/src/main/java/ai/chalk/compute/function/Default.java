package ai.chalk.compute.function;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A parameter's default value, as JSON: used when a call leaves the parameter out, and published in the
 * catalog as the field's {@code chalk.default} metadata so that clients can show it.
 * <pre>{@code
 * public List<String> search(String query, @Default("10") int limit, @Default("null") Optional<String> region)
 * }</pre>
 * Numbers, strings, booleans, arrays (for lists), objects (for records and maps) and {@code null} (for
 * nullable types) are written as in JSON; times as ISO-8601 strings ({@code "\"2024-05-01\""}); bytes as
 * base64 strings. Registration fails when the JSON is not a value of the parameter's type. Defaults are
 * visible to anyone who can read the catalog: never put a secret in one.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface Default {

    /** The default value as JSON. */
    String value();
}
