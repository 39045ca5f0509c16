package ai.chalk.compute.function;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A parameter's default value: used when a call leaves the parameter out (by position, the parameters after the
 * last argument given, also in {@code RemoteFunction.call} by name), and published in the catalog as the field's
 * {@code chalk.default} metadata, as JSON, so that clients can show it and apply it.
 * <pre>{@code
 * public List<String> search(String query, @Default("10") int limit, @Default("-") String separator,
 *                            @Default("null") Optional<String> region, @Default("[\"en\"]") List<String> languages)
 * }</pre>
 * A parameter whose values are text takes the text as written: strings ({@code @Default("-")}), enum constants
 * ({@code @Default("RED")}), times in ISO-8601 ({@code @Default("2024-05-01")}, {@code @Default("PT30S")}) and bytes
 * in base64; {@code null} means null where the type allows it, and the JSON string form ({@code "\"-\""}) is
 * understood too. Every other type is written as JSON: numbers, {@code true}/{@code false}, arrays (for lists),
 * objects (for records and maps), {@code null} (for nullable types), with strings inside them quoted as JSON does.
 * Registration fails when the text is not a value of the parameter's type, with an example of one. Defaults are
 * visible to anyone who can read the catalog: never put a secret in one.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface Default {

    /** The default value: the text itself for a text-valued parameter, JSON for any other. */
    String value();
}
