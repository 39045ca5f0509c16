package ai.chalk.compute.autoconfigure.endpoint;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState;
import java.util.List;
import java.util.Objects;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

/**
 * {@code /actuator/chalkfunctions}: the application's functions with their state and, for a failed one, why;
 * {@code /actuator/chalkfunctions/{name}} shows one. Expose it with
 * {@code management.endpoints.web.exposure.include=health,chalkfunctions}.
 */
@Endpoint(id = "chalkfunctions")
public class ChalkFunctionsEndpoint {

    private final ChalkFunctions functions;

    /**
     * @param functions the application's functions
     */
    public ChalkFunctionsEndpoint(ChalkFunctions functions) {
        this.functions = Objects.requireNonNull(functions, "functions");
    }

    /** Every function. */
    @ReadOperation
    public FunctionsDescriptor functions() {
        return new FunctionsDescriptor(
                functions.functions().stream().map(FunctionDescriptor::of).toList());
    }

    /**
     * One function.
     *
     * @param name its registered name
     * @return the function, or {@code null} (404) when there is none of that name
     */
    @ReadOperation
    public FunctionDescriptor function(@Selector String name) {
        return functions.function(name).map(FunctionDescriptor::of).orElse(null);
    }

    /**
     * What the endpoint shows.
     *
     * @param functions the functions, in discovery order
     */
    public record FunctionsDescriptor(List<FunctionDescriptor> functions) {}

    /**
     * One function.
     *
     * @param name     its registered name
     * @param kind     {@code FUNCTION} or {@code SCORER}
     * @param bean     the bean whose method it is
     * @param location where the method is written
     * @param status   {@code DISCOVERED}, {@code DEPLOYING}, {@code DEPLOYED} or {@code FAILED}
     * @param version  the version deployed, or {@code null}
     * @param error    why it failed, or {@code null}
     */
    public record FunctionDescriptor(
            String name, String kind, String bean, String location, String status, Integer version, String error) {

        static FunctionDescriptor of(FunctionDeploymentState state) {
            return new FunctionDescriptor(
                    state.name(),
                    state.kind().name(),
                    state.beanName(),
                    state.location(),
                    state.status().name(),
                    state.version(),
                    state.error());
        }
    }
}
