package ai.chalk.compute.autoconfigure.health;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.scaling.Readiness;
import java.time.Duration;
import java.util.Objects;
import java.util.stream.Stream;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The health of the application's functions, shown as {@code chalkFunctions} under {@code /actuator/health} with one
 * member per function. A deployed function is UP when its scaling group is ready (as many replicas serving as its
 * minimum asks; a function that scales from zero is ready once deployed), DOWN when its replicas cannot start or the
 * server does not answer, and UNKNOWN while replicas start; the group's status, message and replica counts are in
 * the details. A function that failed to deploy is DOWN with the server's or the registry's error, and so is one
 * waiting to retry (the server could not be reached), with its tries and when the next one starts; UNKNOWN while it
 * is discovered or deploying (deployment runs in the background and does not hold the application back). Members are
 * read from {@link ChalkFunctions} on each check, so functions found after this contributor was made are shown too.
 */
public class ChalkFunctionsHealthContributor implements CompositeHealthContributor {

    private static final Duration READINESS_TIMEOUT = Duration.ofSeconds(2);

    private final ChalkFunctions functions;
    private final FunctionDeployer deployer;

    /**
     * @param functions the application's functions
     * @param deployer  asks the server how a deployed function's replicas are doing; {@code null} to report deployment
     *                  only
     */
    public ChalkFunctionsHealthContributor(ChalkFunctions functions, FunctionDeployer deployer) {
        this.functions = Objects.requireNonNull(functions, "functions");
        this.deployer = deployer;
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
        return () -> functions
                .function(name)
                .map(this::health)
                .orElseGet(() -> Health.unknown()
                        .withDetail("error", "no function named '" + name + "'")
                        .build());
    }

    Health health(FunctionDeploymentState state) {
        Health.Builder builder = switch (state.status()) {
            case FAILED -> Health.down().withDetail("error", state.error());
            case RETRYING ->
                Health.down()
                        .withDetail("error", state.error())
                        .withDetail("attempts", state.attempts())
                        .withDetail("nextAttempt", String.valueOf(state.nextAttempt()));
            case DEPLOYED -> deployed(state);
            case DISCOVERED, DEPLOYING -> Health.unknown();
        };
        return builder.withDetail("status", state.status().name())
                .withDetail("kind", state.kind().name())
                .withDetail("location", state.location())
                .build();
    }

    private Health.Builder deployed(FunctionDeploymentState state) {
        if (deployer == null) {
            return Health.up().withDetail("version", state.version());
        }
        Readiness readiness;
        try {
            readiness = deployer.readiness(state.name(), READINESS_TIMEOUT);
        } catch (ChalkComputeException e) {
            return Health.down().withDetail("version", state.version()).withDetail("error", e.getMessage());
        }
        Health.Builder builder = switch (readiness.status()) {
            case "ready" -> Health.up();
            // replicas failed to start: serving if some do, else down while the server retries
            case "degraded" -> readiness.readyReplicas() > 0 ? Health.up() : Health.down();
            case "failed" -> Health.down();
            default -> Health.unknown();
        };
        builder.withDetail("version", state.version())
                .withDetail("replicas", readiness.status())
                .withDetail("readyReplicas", readiness.readyReplicas())
                .withDetail("availableReplicas", readiness.availableReplicas());
        if (!readiness.message().isEmpty()) {
            builder.withDetail("message", readiness.message());
        }
        return builder;
    }
}
