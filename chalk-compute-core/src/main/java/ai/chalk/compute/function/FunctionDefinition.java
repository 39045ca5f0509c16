package ai.chalk.compute.function;

import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A function discovered from an annotated method: what to deploy, and the Arrow schemas its calls use.
 *
 * @param name           the registered name callers use, such as {@code score} or {@code Embedder.embed}
 * @param kind           a plain function or a scorer
 * @param declaringClass the class whose method it is
 * @param method         the method
 * @param className      the {@link ChalkClass} deployment that serves it, for a class's method
 * @param description    what it does; empty when not given
 * @param deployment     where its replicas run (a class method's are its class's)
 * @param callOptions    how each call runs
 * @param parameters     its parameters, in order
 * @param returnType     its declared return type, generic arguments included
 * @param inputSchema    one field per parameter, in order
 * @param outputSchema   one field, {@code output}, for the return value; with the description in
 *                       {@code chalk.function.description} and {@code chalk.function.is_generator=false}
 */
public record FunctionDefinition(
        String name,
        FunctionKind kind,
        Class<?> declaringClass,
        Method method,
        Optional<String> className,
        String description,
        DeploymentOptions deployment,
        CallOptions callOptions,
        List<FunctionParameter> parameters,
        Type returnType,
        Schema inputSchema,
        Schema outputSchema) {

    /** Checks for nulls and copies the parameter list. */
    public FunctionDefinition {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(declaringClass, "declaringClass");
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(className, "className");
        Objects.requireNonNull(description, "description");
        Objects.requireNonNull(deployment, "deployment");
        Objects.requireNonNull(callOptions, "callOptions");
        parameters = List.copyOf(parameters);
        Objects.requireNonNull(returnType, "returnType");
        Objects.requireNonNull(inputSchema, "inputSchema");
        Objects.requireNonNull(outputSchema, "outputSchema");
    }

    /** The deployment that serves it: its {@link ChalkClass}'s name for a class's method, else its own name. */
    public String deploymentName() {
        return className.orElse(name);
    }

    /**
     * The parameter of the given name.
     *
     * @param parameterName the parameter's name
     * @return the parameter, if the function has one of that name
     */
    public Optional<FunctionParameter> parameter(String parameterName) {
        return parameters.stream().filter(p -> p.name().equals(parameterName)).findFirst();
    }

    /** The method as it reads in messages, for example {@code com.acme.Fns.score(String text, int limit)}. */
    public String signature() {
        return MethodText.of(method);
    }
}
