package ai.chalk.compute.function;

import ai.chalk.compute.image.Image;
import ai.chalk.compute.network.Credential;
import ai.chalk.compute.network.NetworkPolicy;
import ai.chalk.compute.secret.SecretBindings;
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
 * @param secrets     the secrets the replicas receive: from {@code secrets}, each {@code "NAME"} (the Chalk secret
 *                    NAME under its own name) or {@code "VAR=NAME"} (as the variable VAR)
 * @param minReplicas the fewest replicas kept running
 * @param maxReplicas the most replicas started under load
 * @param network     what the replicas may reach on the network: from {@code network} and {@code allowedHosts}, or
 *                    {@link #withNetwork}; empty for none (their own loopback only)
 * @param credentials credentials only some hosts receive: from {@code credentials} ({@code "HOST[,HOST...]=SECRET"}),
 *                    or {@link #withCredentials}
 * @param gpu         GPUs per replica, in Kubernetes notation ({@code "1"}); a server without GPUs refuses the
 *                    deployment with {@code FAILED_PRECONDITION} rather than run it without
 */
public record DeploymentOptions(
        Optional<Image> image,
        Optional<String> cpu,
        Optional<String> memory,
        Map<String, String> env,
        SecretBindings secrets,
        OptionalInt minReplicas,
        OptionalInt maxReplicas,
        Optional<NetworkPolicy> network,
        List<Credential> credentials,
        Optional<String> gpu) {

    /** Options that leave every choice to the deployment. */
    public static final DeploymentOptions DEFAULTS = new DeploymentOptions(
            Optional.empty(),
            Optional.empty(),
            Optional.empty(),
            Map.of(),
            SecretBindings.NONE,
            OptionalInt.empty(),
            OptionalInt.empty(),
            Optional.empty(),
            List.of(),
            Optional.empty());

    /** Checks for nulls and copies the collections. */
    public DeploymentOptions {
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(cpu, "cpu");
        Objects.requireNonNull(memory, "memory");
        env = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(env));
        Objects.requireNonNull(secrets, "secrets");
        Objects.requireNonNull(minReplicas, "minReplicas");
        Objects.requireNonNull(maxReplicas, "maxReplicas");
        Objects.requireNonNull(network, "network");
        credentials = List.copyOf(credentials);
        Objects.requireNonNull(gpu, "gpu");
    }

    /** Names the environment's variables without their values, which may be secrets. */
    @Override
    public String toString() {
        return "DeploymentOptions[image=" + image + ", cpu=" + cpu + ", memory=" + memory + ", env=" + env.keySet()
                + ", secrets=" + secrets + ", minReplicas=" + minReplicas + ", maxReplicas=" + maxReplicas
                + ", network=" + network + ", credentials=" + credentials + ", gpu=" + gpu + "]";
    }

    /**
     * Options without a network policy or credentials.
     *
     * @param image       the image
     * @param cpu         CPU per replica
     * @param memory      memory per replica
     * @param env         environment variables
     * @param secrets     the secrets
     * @param minReplicas the fewest replicas
     * @param maxReplicas the most replicas
     */
    public DeploymentOptions(
            Optional<Image> image,
            Optional<String> cpu,
            Optional<String> memory,
            Map<String, String> env,
            SecretBindings secrets,
            OptionalInt minReplicas,
            OptionalInt maxReplicas) {
        this(image, cpu, memory, env, secrets, minReplicas, maxReplicas, Optional.empty(), List.of(), Optional.empty());
    }

    /**
     * Options whose secrets are named as {@code @ChalkFunction(secrets = ...)} names them.
     *
     * @param image       the image
     * @param cpu         CPU per replica
     * @param memory      memory per replica
     * @param env         environment variables
     * @param secrets     {@code "NAME"} or {@code "VAR=NAME"} entries naming Chalk secrets
     * @param minReplicas the fewest replicas
     * @param maxReplicas the most replicas
     */
    public DeploymentOptions(
            Optional<Image> image,
            Optional<String> cpu,
            Optional<String> memory,
            Map<String, String> env,
            List<String> secrets,
            OptionalInt minReplicas,
            OptionalInt maxReplicas) {
        this(image, cpu, memory, env, SecretBindings.ofNames(secrets), minReplicas, maxReplicas);
    }

    /**
     * These options with other secrets, for example secrets bound to variables in code:
     * {@code options.withSecrets(options.secrets().with("API_KEY", Secret.fromChalkEnv("OPENAI_KEY")))}.
     *
     * @param secrets the secrets
     * @return the new options
     */
    public DeploymentOptions withSecrets(SecretBindings secrets) {
        return new DeploymentOptions(
                image, cpu, memory, env, secrets, minReplicas, maxReplicas, network, credentials, gpu);
    }

    /**
     * These options with a network policy for the replicas (see {@link NetworkPolicy}).
     *
     * @param network the policy
     * @return the new options
     */
    public DeploymentOptions withNetwork(NetworkPolicy network) {
        return new DeploymentOptions(
                image, cpu, memory, env, secrets, minReplicas, maxReplicas, Optional.of(network), credentials, gpu);
    }

    /**
     * These options with credentials only some hosts receive (see {@link Credential}), replacing any declared:
     * {@code options.withCredentials(List.of(new Credential(List.of("api.openai.com"), Secret.fromLocalEnv("KEY"))))}.
     *
     * @param credentials the credentials
     * @return the new options
     */
    public DeploymentOptions withCredentials(List<Credential> credentials) {
        return new DeploymentOptions(
                image, cpu, memory, env, secrets, minReplicas, maxReplicas, network, credentials, gpu);
    }

    /**
     * These options with GPUs for each replica.
     *
     * @param gpu GPUs per replica in Kubernetes notation, such as {@code "1"} or {@code "nvidia-tesla-t4:1"}
     * @return the new options
     */
    public DeploymentOptions withGpu(String gpu) {
        return new DeploymentOptions(
                image, cpu, memory, env, secrets, minReplicas, maxReplicas, network, credentials, Optional.of(gpu));
    }
}
