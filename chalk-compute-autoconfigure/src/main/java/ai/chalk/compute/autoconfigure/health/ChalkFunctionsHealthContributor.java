package ai.chalk.compute.autoconfigure.health;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState;
import java.util.Objects;
import java.util.stream.Stream;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The health of the application's functions, shown as {@code chalkFunctions} under {@code /actuator/health} with one
 * member per function: UP once deployed, DOWN with the server's or the registry's error when it failed, UNKNOWN
 * while it is discovered or deploying (deployment runs in the background and does not hold the application back). Members are read
 * from {@link ChalkFunctions} on each check, so functions found after this contributor was made are shown too.
 */
public class ChalkFunctionsHealthContributor implements CompositeHealthContributor {

    private final ChalkFunctions functions;

    /**
     * @param functions the application's functions
     */
    public ChalkFunctionsHealthContributor(ChalkFunctions functions) {
        this.functions = Objects.requireNonNull(functions, "functions");
    }

    @Override
    public HealthContributor getContributor(String name) {
        return functions.function(name).isPresent() ? indicator(name) : null;
    }

    @Override
    public Stream<Entry> stream() {
        return functions.functions().stream().map(f -> new Entry(f.name(), indicator(f.name())));
    }

    private HealthIndicator indicator(String name) {
        // the state is read at each check: it changes while the application runs
        return () -> functions.function(name).map(ChalkFunctionsHealthContributor::health)
                .orElseGet(() -> Health.unknown().withDetail("error", "no function named '" + name + "'").build());
    }

    static Health health(FunctionDeploymentState state) {
        Health.Builder builder = switch (state.status()) {
            case FAILED -> Health.down().withDetail("error", state.error());
            case DEPLOYED -> Health.up().withDetail("version", state.version());
            case DISCOVERED, DEPLOYING -> Health.unknown();
        };
        return builder.withDetail("status", state.status().name())
                .withDetail("kind", state.kind().name())
                .withDetail("location", state.location())
                .build();
    }
}
