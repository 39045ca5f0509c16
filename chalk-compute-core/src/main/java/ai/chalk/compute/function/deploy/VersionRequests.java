package ai.chalk.compute.function.deploy;

import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.arrow.SchemaProtos;
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
    static final int DEFAULT_SHUTDOWN_DELAY_SECONDS = 60;

    private VersionRequests() {
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
    static CreateExternalFunctionVersionRequest build(FunctionDefinition function, List<FunctionDefinition> served,
                                                      String code, WorkerMode worker, String image, Optional<String> force) {
        Objects.requireNonNull(code, "code");
        var deployment = function.deployment();
        var container = ChalkContainerSpec.newBuilder().setImage(image).putAllEnvVars(deployment.env());
        if (deployment.cpu().isPresent() || deployment.memory().isPresent()) {
            var resources = ResourceLimits.newBuilder();
            deployment.cpu().ifPresent(resources::setCpu);
            deployment.memory().ifPresent(resources::setMemory);
            container.setResources(resources);
        }
        for (String secret : deployment.secrets()) {
            container.addSecretRefs(SecretRef.newBuilder().setSecretName(secret));
        }
        var scaling = ScalingSpec.newBuilder()
                .setMinReplicas(deployment.minReplicas().orElse(0))
                .setMaxReplicas(deployment.maxReplicas().orElse(Math.max(1, deployment.minReplicas().orElse(1))))
                .setShutdownDelaySeconds(DEFAULT_SHUTDOWN_DELAY_SECONDS);
        var config = FunctionConfig.newBuilder()
                .putOptions(CODE, code)
                .putOptions(FUNCTIONS, served.stream()
                        .map(f -> f.name() + "=" + f.declaringClass().getName() + "#" + f.method().getName())
                        .collect(Collectors.joining(",")))
                .putOptions(WORKER, worker.value());
        force.ifPresent(nonce -> config.putOptions(FORCE, nonce));
        var calls = function.callOptions();
        calls.timeout().ifPresent(timeout -> config.putOptions(TIMEOUT, timeout.toString()));
        calls.retries().ifPresent(retries -> config.setRetryPolicy(RetryPolicy.newBuilder().setMaxRetries(retries)));
        calls.concurrency().ifPresent(max -> config.setConcurrency(ConcurrencyPolicy.newBuilder().setMaxConcurrent(max)));
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(function.name())
                .setInputArrowSchema(SchemaProtos.toProto(function.inputSchema()))
                .setOutputArrowSchema(SchemaProtos.toProto(function.outputSchema()))
                .setSpec(ScalingGroupSpec.newBuilder().setContainerSpec(container).setScalingSpec(scaling))
                .setConfig(config)
                .build();
    }
}
