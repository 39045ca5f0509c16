package ai.chalk.compute.function.deploy;

import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.arrow.SchemaProtos;
import ai.chalk.compute.network.NetworkSpecs;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ResourceLimits;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ConcurrencyPolicy;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.RetryPolicy;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Collectors;

/** Builds the one ensure request that deploys a function version, as {@code docs/functions-protocol.md} §2 says. */
final class VersionRequests {

    static final String CODE = "chalk_compute.code";
    static final String FUNCTIONS = "chalk_compute.functions";
    static final String WORKER = "chalk_compute.worker";
    static final String FORCE = "chalk_compute.force";
    static final String TIMEOUT = "chalk_compute.timeout";
    /** The managed secrets' revisions (name@updated-at), so that setting one again makes a new version. */
    static final String SECRETS = "chalk_compute.secrets";

    static final int DEFAULT_SHUTDOWN_DELAY_SECONDS = 60;

    private VersionRequests() {}

    /** References to managed secrets only, made without the server (local secrets need it: see SecretsClient). */
    static List<SecretRef> managedRefs(ai.chalk.compute.secret.SecretBindings secrets) {
        List<SecretRef> refs = new java.util.ArrayList<>();
        secrets.env()
                .forEach((name, secret) -> refs.add(SecretRef.newBuilder()
                        .setSecretName(((ai.chalk.compute.secret.Secret.ChalkEnv) secret).name())
                        .putAliases(((ai.chalk.compute.secret.Secret.ChalkEnv) secret).name(), name)
                        .build()));
        secrets.bulk()
                .forEach(secret -> refs.add(SecretRef.newBuilder()
                        .setSecretName(((ai.chalk.compute.secret.Secret.ChalkEnv) secret).name())
                        .build()));
        return refs;
    }

    /**
     * The request deploying {@code function}.
     *
     * @param function the function
     * @param served   every function its deployment serves ({@code function} alone, or its class's methods)
     * @param code     the code digest
     * @param worker   how the worker loads it
     * @param image    the image reference; empty for the runtime's default
     * @param force    a nonce forcing a new version, or empty
     */
    static CreateExternalFunctionVersionRequest build(
            FunctionDefinition function,
            List<FunctionDefinition> served,
            String code,
            WorkerMode worker,
            String image,
            Optional<String> force) {
        return build(
                function,
                served,
                code,
                worker,
                image,
                force,
                managedRefs(function.deployment().secrets()),
                "");
    }

    /**
     * {@code request} with the function's network policy and its credentials' placeholder variables in its container
     * spec.
     */
    static CreateExternalFunctionVersionRequest withNetwork(
            CreateExternalFunctionVersionRequest request, NetworkSpecs.Compiled network) {
        if (network.policy().isEmpty()) {
            return request;
        }
        ScalingGroupSpec.Builder spec = request.getSpec().toBuilder();
        spec.getContainerSpecBuilder().setNetworkPolicy(network.policy().get()).putAllEnvVars(network.env());
        return request.toBuilder().setSpec(spec).build();
    }

    /**
     * The request deploying {@code function} with its secrets resolved to references.
     *
     * @param secretRefs the references to the secrets its replicas receive
     * @param revisions  the revisions of the managed secrets among them, empty for none
     */
    static CreateExternalFunctionVersionRequest build(
            FunctionDefinition function,
            List<FunctionDefinition> served,
            String code,
            WorkerMode worker,
            String image,
            Optional<String> force,
            List<SecretRef> secretRefs,
            String revisions) {
        Objects.requireNonNull(code, "code");
        var deployment = function.deployment();
        var container = ChalkContainerSpec.newBuilder().setImage(image).putAllEnvVars(deployment.env());
        if (deployment.cpu().isPresent()
                || deployment.memory().isPresent()
                || deployment.gpu().isPresent()) {
            var resources = ResourceLimits.newBuilder();
            deployment.cpu().ifPresent(resources::setCpu);
            deployment.memory().ifPresent(resources::setMemory);
            deployment.gpu().ifPresent(resources::setGpu);
            container.setResources(resources);
        }
        container.addAllSecretRefs(secretRefs);
        var scaling = ScalingSpec.newBuilder()
                .setMinReplicas(deployment.minReplicas().orElse(0))
                .setMaxReplicas(deployment
                        .maxReplicas()
                        .orElse(Math.max(1, deployment.minReplicas().orElse(1))))
                .setShutdownDelaySeconds(DEFAULT_SHUTDOWN_DELAY_SECONDS);
        var config = FunctionConfig.newBuilder()
                .putOptions(CODE, code)
                .putOptions(
                        FUNCTIONS,
                        served.stream()
                                .map(f -> f.name() + "=" + f.declaringClass().getName() + "#"
                                        + f.method().getName())
                                .collect(Collectors.joining(",")))
                .putOptions(WORKER, worker.value());
        force.ifPresent(nonce -> config.putOptions(FORCE, nonce));
        if (!revisions.isEmpty()) {
            config.putOptions(SECRETS, revisions);
        }
        var calls = function.callOptions();
        calls.timeout().ifPresent(timeout -> config.putOptions(TIMEOUT, timeout.toString()));
        calls.retries()
                .ifPresent(retries ->
                        config.setRetryPolicy(RetryPolicy.newBuilder().setMaxRetries(retries)));
        calls.concurrency()
                .ifPresent(max ->
                        config.setConcurrency(ConcurrencyPolicy.newBuilder().setMaxConcurrent(max)));
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(function.name())
                .setInputArrowSchema(SchemaProtos.toProto(function.inputSchema()))
                .setOutputArrowSchema(SchemaProtos.toProto(function.outputSchema()))
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(container)
                        .setScalingSpec(scaling))
                .setConfig(config)
                .build();
    }
}
