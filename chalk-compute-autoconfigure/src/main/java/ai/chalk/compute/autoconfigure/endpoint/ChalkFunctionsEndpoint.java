package ai.chalk.compute.autoconfigure.endpoint;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.ChalkFunctionsDeployment;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * {@code /actuator/chalkfunctions}: the application's functions with their state and, for a failed one, why, and for
 * one waiting to retry, its tries and when the next one starts; {@code /actuator/chalkfunctions/{name}} shows one.
 * {@code POST /actuator/chalkfunctions} redeploys every function now, {@code POST /actuator/chalkfunctions/{name}}
 * one (a function waiting to retry is tried at once; an unchanged one gets its version back). Expose it with
 * {@code management.endpoints.web.exposure.include=health,chalkfunctions}.
 */
@Endpoint(id = "chalkfunctions")
public class ChalkFunctionsEndpoint {

    private final ChalkFunctions functions;
    private final @Nullable ChalkFunctionsDeployment deployment;

    /**
     * An endpoint that shows the functions and cannot redeploy them.
     *
     * @param functions the application's functions
     */
    public ChalkFunctionsEndpoint(ChalkFunctions functions) {
        this(functions, null);
    }

    /**
     * @param functions  the application's functions
     * @param deployment their deployment, or {@code null} when the application does not deploy them
     */
    public ChalkFunctionsEndpoint(ChalkFunctions functions, @Nullable ChalkFunctionsDeployment deployment) {
        this.functions = Objects.requireNonNull(functions, "functions");
        this.deployment = deployment;
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
     * Redeploys every function now.
     *
     * @return which functions started deploying, and why the others did not
     */
    @WriteOperation
    public RedeployDescriptor redeploy() {
        return redeploy(Optional.empty());
    }

    /**
     * Redeploys one function now.
     *
     * @param name its registered name
     * @return whether it started deploying, or {@code null} (404) when there is no function of that name
     */
    @WriteOperation
    public @Nullable RedeployDescriptor redeployOne(@Selector String name) {
        return redeploy(Optional.of(name));
    }

    private @Nullable RedeployDescriptor redeploy(Optional<String> name) {
        if (deployment == null) {
            if (name.isPresent() && functions.function(name.get()).isEmpty()) {
                return null;
            }
            String why = "this application does not deploy its functions (chalk.compute.functions.deploy=false,"
                    + " or it is a function worker)";
            Map<String, String> notRedeployed = new LinkedHashMap<>();
            name.map(List::of)
                    .orElseGet(() -> functions.functions().stream()
                            .map(FunctionDeploymentState::name)
                            .toList())
                    .forEach(n -> notRedeployed.put(n, why));
            return new RedeployDescriptor(List.of(), notRedeployed);
        }
        return deployment
                .redeploy(name)
                .map(r -> new RedeployDescriptor(r.started(), r.notStarted()))
                .orElse(null);
    }

    /**
     * What a redeploy did; follow the functions with a read of this endpoint.
     *
     * @param redeploying    the functions whose deployment started
     * @param notRedeployed  the others, each with why (already deploying, an invalid signature, ...)
     */
    public record RedeployDescriptor(List<String> redeploying, Map<String, String> notRedeployed) {}

    /**
     * What the endpoint shows.
     *
     * @param functions the functions, in discovery order
     */
    public record FunctionsDescriptor(List<FunctionDescriptor> functions) {}

    /**
     * One function.
     *
     * @param name        its registered name
     * @param kind        {@code FUNCTION} or {@code SCORER}
     * @param bean        the bean whose method it is
     * @param location    where the method is written
     * @param status      {@code DISCOVERED}, {@code DEPLOYING}, {@code RETRYING}, {@code DEPLOYED} or {@code FAILED}
     * @param version     the version deployed, or {@code null}
     * @param reused      whether that version is one the server already had (nothing changed)
     * @param error       why it failed, or why its last try failed while retrying; else {@code null}
     * @param attempts    how many times its deployment has been tried in a row
     * @param nextAttempt when it is tried again (ISO-8601), while retrying; else {@code null}
     */
    public record FunctionDescriptor(
            String name,
            String kind,
            String bean,
            String location,
            String status,
            @Nullable Integer version,
            boolean reused,
            @Nullable String error,
            int attempts,
            @Nullable String nextAttempt) {

        static FunctionDescriptor of(FunctionDeploymentState state) {
            return new FunctionDescriptor(
                    state.name(),
                    state.kind().name(),
                    state.beanName(),
                    state.location(),
                    state.status().name(),
                    state.version(),
                    state.reused(),
                    state.error(),
                    state.attempts(),
                    state.nextAttempt() == null ? null : state.nextAttempt().toString());
        }
    }
}
