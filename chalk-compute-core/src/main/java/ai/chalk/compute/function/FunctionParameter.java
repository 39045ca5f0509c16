package ai.chalk.compute.function;

import java.lang.reflect.Type;
import java.util.Objects;
import java.util.Optional;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * One parameter of a registered function.
 *
 * @param name        its name: the Arrow column and the dataset column it binds to
 * @param type        its declared Java type, generic arguments included
 * @param defaultJson its {@link Default} value as compact JSON, when it has one
 * @param role        what it binds to in an evaluation
 * @param field       its Arrow field in the function's input schema
 */
public record FunctionParameter(String name, Type type, Optional<String> defaultJson, ParameterRole role, Field field) {

    /** Checks for nulls. */
    public FunctionParameter {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(defaultJson, "defaultJson");
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(field, "field");
    }

    /** Whether a call must supply it: it has no default. */
    public boolean isRequired() {
        return defaultJson.isEmpty();
    }
}
