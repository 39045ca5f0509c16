package ai.chalk.compute.function;

import ai.chalk.compute.image.Image;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Where and how a function's replicas run, as declared on {@link ChalkFunction}, {@link ChalkScorer} or
 * {@link ChalkClass}; empty values leave the choice to the deployment.
 *
 * @param image       the image, from {@code image} ({@code Image.base(reference)}) or {@code imageFactory}
 * @param cpu         CPU per replica, a Kubernetes quantity
 * @param memory      memory per replica, a Kubernetes quantity
 * @param env         environment variables, in declaration order
 * @param secrets     names of Chalk secrets the replicas receive
 * @param minReplicas the fewest replicas kept running
 * @param maxReplicas the most replicas started under load
 */
public record DeploymentOptions(Optional<Image> image, Optional<String> cpu, Optional<String> memory,
                                Map<String, String> env, List<String> secrets, OptionalInt minReplicas,
                                OptionalInt maxReplicas) {

    /** Options that leave every choice to the deployment. */
    public static final DeploymentOptions DEFAULTS = new DeploymentOptions(Optional.empty(), Optional.empty(),
            Optional.empty(), Map.of(), List.of(), OptionalInt.empty(), OptionalInt.empty());

    /** Checks for nulls and copies the collections. */
    public DeploymentOptions {
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(cpu, "cpu");
        Objects.requireNonNull(memory, "memory");
        env = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(env));
        secrets = List.copyOf(secrets);
        Objects.requireNonNull(minReplicas, "minReplicas");
        Objects.requireNonNull(maxReplicas, "maxReplicas");
    }
}
