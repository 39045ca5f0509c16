package ai.chalk.compute.function.deploy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.image.Image;
import ai.chalk.compute.network.NetworkSpecs;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunction;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionTraffic;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionTrafficTarget;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionRequest;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.scaling.Readiness;
import ai.chalk.compute.secret.SecretBindings;
import ai.chalk.compute.secret.SecretsClient;
import io.grpc.Channel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deploys functions to the catalog and manages their versions. A deploy is one ensure request: an unchanged
 * function gets its current version back and nothing is uploaded; otherwise the server names the code blobs it
 * lacks, only those are uploaded, and the request is sent once more.
 * <pre>{@code
 * FunctionDeployer deployer = FunctionDeployer.of(client);
 * try (CodeSnapshot code = CodeSnapshot.ofClassPath()) {
 *     FunctionVersion v = deployer.deploy(registry.get("score").definition(), code, WorkerMode.PLAIN, false);
 * }
 * deployer.rollback(v.functionId(), previous.id());
 * }</pre>
 * Thread-safe.
 */
public final class FunctionDeployer {

    private static final Logger log = LoggerFactory.getLogger(FunctionDeployer.class);

    private final ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog;
    private final CodeUploader uploader;
    private final Function<Image, String> images;
    private final SecretsClient secrets;

    /**
     * A deployer over a channel.
     *
     * @param channel the channel to the server
     * @param images  turns a function's image into a reference, building it when it has steps
     */
    public FunctionDeployer(Channel channel, Function<Image, String> images) {
        this(channel, images, new SecretsClient(channel));
    }

    /**
     * A deployer over a channel, resolving functions' secrets with {@code secrets} (whose local environment local
     * secrets are read from).
     *
     * @param channel the channel to the server
     * @param images  turns a function's image into a reference, building it when it has steps
     * @param secrets the environment's secrets
     */
    public FunctionDeployer(Channel channel, Function<Image, String> images, SecretsClient secrets) {
        this.catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"));
        this.uploader = new CodeUploader(channel);
        this.images = Objects.requireNonNull(images, "images");
        this.secrets = Objects.requireNonNull(secrets, "secrets");
    }

    /**
     * A deployer using a client's channel; images with build steps are built with the client's {@code images()}.
     *
     * @param client the client
     * @return the deployer
     */
    public static FunctionDeployer of(SandboxClient client) {
        return new FunctionDeployer(
                client.channel(),
                image -> image.steps().isEmpty()
                        ? image.baseImage()
                        : client.images().require(image).imageRef(),
                client.secrets());
    }

    /**
     * Deploys a function that its deployment serves alone (a {@code @ChalkFunction}).
     *
     * @param function        the function
     * @param code            the code to run it from
     * @param worker          how the worker loads it
     * @param forceNewVersion create a new version even when nothing changed
     * @return the version serving it now
     * @throws ChalkComputeException when the server refuses the deploy
     */
    public FunctionVersion deploy(
            FunctionDefinition function, CodeSnapshot code, WorkerMode worker, boolean forceNewVersion) {
        return deploy(function, List.of(function), code, worker, forceNewVersion);
    }

    /**
     * Deploys a function whose deployment serves several (a {@code @ChalkClass}'s methods).
     *
     * <p>An unchanged function keeps its version: the same code, image, configuration and managed secret revisions
     * (a managed secret set again since makes a new version). A function with integration or local secrets gets a new
     * version on every deploy, as their values cannot be compared; local values are saved as managed secrets (see
     * {@link ai.chalk.compute.secret.Secret}).
     *
     * @param function        the function
     * @param served          every function its deployment serves, {@code function} included
     * @param code            the code to run it from
     * @param worker          how the worker loads it
     * @param forceNewVersion create a new version even when nothing changed
     * @return the version serving it now
     * @throws ChalkComputeException when the server refuses the deploy
     */
    public FunctionVersion deploy(
            FunctionDefinition function,
            List<FunctionDefinition> served,
            CodeSnapshot code,
            WorkerMode worker,
            boolean forceNewVersion) {
        if (!served.contains(function)) {
            throw new IllegalArgumentException("served must include " + function.name());
        }
        String image = function.deployment().image().map(images).orElse("");
        SecretBindings bindings = function.deployment().secrets();
        SecretsClient.References refs =
                bindings.isEmpty() ? new SecretsClient.References(List.of(), List.of()) : secrets.references(bindings);
        NetworkSpecs.Compiled network = NetworkSpecs.Compiled.NONE;
        try {
            network = NetworkSpecs.compile(
                    function.deployment().network().orElse(null),
                    function.deployment().credentials(),
                    secrets);
            // a local value saved for the policy is new at every deploy, as one of secret_refs is
            boolean force = forceNewVersion
                    || !bindings.allowVersionReuse()
                    || !network.uploaded().isEmpty();
            return deploy(
                    function,
                    VersionRequests.withNetwork(
                            VersionRequests.build(
                                    function,
                                    served,
                                    code.digest(),
                                    worker,
                                    image,
                                    force ? Optional.of(UUID.randomUUID().toString()) : Optional.empty(),
                                    refs.refs(),
                                    secrets.revisions(bindings.withBulk(network.managedSecrets()))),
                            network),
                    code);
        } catch (RuntimeException e) {
            secrets.forget(refs.uploaded());
            secrets.forget(network.uploaded());
            throw e;
        }
    }

    private FunctionVersion deploy(
            FunctionDefinition function, CreateExternalFunctionVersionRequest request, CodeSnapshot code) {
        ExternalFunctionVersion version;
        try {
            version = catalog.createExternalFunctionVersion(request).getExternalFunctionVersion();
        } catch (StatusRuntimeException e) {
            List<String> missing =
                    MissingCode.digests(e).orElseThrow(() -> ServerCall.failure(ResourceKind.FUNCTION, e));
            log.debug("{}: the server lacks {} code blob(s): {}", function.name(), missing.size(), missing);
            UploadResult uploaded = uploader.upload(code);
            log.info(
                    "{}: uploaded {} code blob(s), {} bytes",
                    function.name(),
                    uploaded.uploaded().size(),
                    uploaded.bytes());
            version = ServerCall.run(
                    ResourceKind.FUNCTION,
                    () -> catalog.createExternalFunctionVersion(request).getExternalFunctionVersion());
        }
        return FunctionVersion.of(version, version.getId());
    }

    /**
     * Deploys every function of a registry: each one with the functions its deployment serves (a {@code @ChalkClass}'s
     * methods together), one ensure request each, in registration order.
     *
     * @param registry        the functions
     * @param code            the code to run them from
     * @param worker          how the worker loads them
     * @param forceNewVersion create new versions even when nothing changed
     * @return the version serving each function now, by name, in registration order
     * @throws ChalkComputeException when the server refuses a deploy; the functions before it stay deployed
     */
    public java.util.Map<String, FunctionVersion> deployAll(
            ai.chalk.compute.function.FunctionRegistry registry,
            CodeSnapshot code,
            WorkerMode worker,
            boolean forceNewVersion) {
        List<FunctionDefinition> all = registry.definitions();
        java.util.Map<String, FunctionVersion> deployed = new java.util.LinkedHashMap<>();
        for (FunctionDefinition function : all) {
            List<FunctionDefinition> served = all.stream()
                    .filter(f -> f.deploymentName().equals(function.deploymentName()))
                    .toList();
            deployed.put(function.name(), deploy(function, served, code, worker, forceNewVersion));
        }
        return deployed;
    }

    /**
     * Every version of a function, oldest first, with the current one marked.
     *
     * @param functionName the function's name
     * @return its versions
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     * @throws ChalkComputeException                            when the server cannot be reached
     */
    public List<FunctionVersion> versions(String functionName) {
        ExternalFunction function = function(functionName);
        String current = function.getCurrentVersion().getId();
        List<FunctionVersion> versions = new ArrayList<>();
        String cursor = null;
        do {
            var request = ListExternalFunctionVersionsRequest.newBuilder().setFunctionId(function.getId());
            if (cursor != null) {
                request.setCursor(cursor);
            }
            ListExternalFunctionVersionsResponse page =
                    ServerCall.run(ResourceKind.FUNCTION, () -> catalog.listExternalFunctionVersions(request.build()));
            page.getEntriesList()
                    .forEach(e -> versions.add(FunctionVersion.of(e.getExternalFunctionVersion(), current)));
            cursor = page.hasNextCursor() && !page.getNextCursor().isEmpty() ? page.getNextCursor() : null;
        } while (cursor != null);
        versions.sort(java.util.Comparator.comparingInt(FunctionVersion::version));
        return versions;
    }

    /**
     * Whether a function's current version can serve: the status and replica counts of the scaling group that runs
     * it ({@code ready} once as many replicas serve as its minimum asks, which is at once for a function that scales
     * from zero; {@code failed} with the reason when its replicas cannot start).
     *
     * @param functionName the function's name
     * @param timeout      how long to wait for the server's answer
     * @return the readiness of the function's scaling group
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     * @throws ChalkComputeException                            when the server does not answer in time
     */
    public Readiness readiness(String functionName, Duration timeout) {
        return Readiness.of(ServerCall.run(
                        ResourceKind.FUNCTION,
                        () -> catalog.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                        .setFunctionName(functionName)
                                        .setIncludeScalingGroup(true)
                                        .build()))
                .getScalingGroup());
    }

    /**
     * Makes a version current again: all of the function's traffic goes to it.
     *
     * @param functionId the function's stable id
     * @param versionId  the version's id
     * @throws ai.chalk.compute.error.FunctionNotFoundException when either is unknown
     */
    public void rollback(String functionId, String versionId) {
        ServerCall.run(
                ResourceKind.FUNCTION,
                () -> catalog.updateExternalFunction(UpdateExternalFunctionRequest.newBuilder()
                        .setExternalFunctionId(functionId)
                        .setTraffic(ExternalFunctionTraffic.newBuilder()
                                .addTargets(ExternalFunctionTrafficTarget.newBuilder()
                                        .setExternalFunctionVersionId(versionId)
                                        .setPercent(100)))
                        .build()));
    }

    /**
     * Deletes a function and all its versions.
     *
     * @param functionName the function's name
     * @throws ai.chalk.compute.error.FunctionNotFoundException when it is unknown
     */
    public void delete(String functionName) {
        ServerCall.run(
                ResourceKind.FUNCTION,
                () -> catalog.deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                        .setFunctionName(functionName)
                        .build()));
    }

    private ExternalFunction function(String name) {
        return ServerCall.run(
                ResourceKind.FUNCTION,
                () -> catalog.getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                .setFunctionName(name)
                                .build())
                        .getExternalFunction());
    }
}
