package ai.chalk.compute.function.deploy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.catalog.FunctionVersions;
import ai.chalk.compute.image.Image;
import ai.chalk.compute.network.NetworkSpecs;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunction;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.function.v1.FunctionLogServiceGrpc;
import ai.chalk.compute.proto.function.v1.GetFunctionLogsRequest;
import ai.chalk.compute.proto.function.v1.GetFunctionLogsResponse;
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

    /** The most lines {@link #logs(String, int)} returns: what the server keeps of a function. */
    public static final int MAX_LOG_LINES = 1000;

    private final ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog;
    private final FunctionVersions versions;
    private final FunctionLogServiceGrpc.FunctionLogServiceBlockingStub logs;
    private final CodeUploader uploader;
    private final Function<Image, String> images;
    private final SecretsClient secrets;
    private final java.util.function.Supplier<SandboxClient> client;

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
        this(channel, images, secrets, () -> SandboxClient.forChannel(channel));
    }

    private FunctionDeployer(
            Channel channel,
            Function<Image, String> images,
            SecretsClient secrets,
            java.util.function.Supplier<SandboxClient> client) {
        this.client = client;
        this.catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"));
        this.versions = new FunctionVersions(channel);
        this.logs = FunctionLogServiceGrpc.newBlockingStub(channel);
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
                client.secrets(),
                () -> client);
    }

    /**
     * Deploys the {@code @ChalkFunction} and {@code @ChalkScorer} methods of classes, in the background: the classes
     * are read now (a method that cannot be deployed throws here), then the class path is snapshotted and each
     * function deployed on a daemon thread, concurrently. This is the whole of deploying outside Spring:
     * <pre>{@code
     * try (SandboxClient client = SandboxClient.fromEnv()) {
     *     List<DeployedFunction> deployed = client.functions().deploy(Pricing.class);
     *     deployed.forEach(DeployedFunction::await);
     * }
     * }</pre>
     * A deployment that fails and whose handle is never {@linkplain DeployedFunction#await() awaited} is written to
     * {@code stderr} when the program exits, which then exits with status 1. Instance methods run on one instance
     * made with the class's no-argument constructor in the function's replica.
     *
     * @param classes the classes declaring the functions
     * @return one handle per function, in the classes' order and by method name within a class
     * @throws ai.chalk.compute.function.FunctionDefinitionException when a class has no annotated method, an option
     *                                                               is malformed, or two functions share a name
     * @throws ai.chalk.compute.function.FunctionSignatureException  when a parameter or return type cannot travel
     */
    public List<DeployedFunction> deploy(Class<?>... classes) {
        if (classes.length == 0) {
            throw new IllegalArgumentException("name at least one class declaring @ChalkFunction methods");
        }
        ai.chalk.compute.function.FunctionRegistry registry = new ai.chalk.compute.function.FunctionRegistry();
        for (Class<?> type : classes) {
            registry.register(Objects.requireNonNull(type, "class"));
        }
        List<FunctionDefinition> all = registry.definitions();
        java.util.concurrent.CompletableFuture<CodeSnapshot> code = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> CodeSnapshot.ofClassPath(List.of(classes)), BackgroundDeployments.EXECUTOR);
        List<DeployedFunction> handles = new ArrayList<>();
        for (FunctionDefinition function : all) {
            List<FunctionDefinition> served = all.stream()
                    .filter(f -> f.deploymentName().equals(function.deploymentName()))
                    .toList();
            java.util.concurrent.CompletableFuture<FunctionVersion> deployment = code.thenApplyAsync(
                    snapshot -> {
                        Deployment done = ensure(function, served, snapshot, WorkerMode.PLAIN, false);
                        log.info(
                                "{}: {} version {}",
                                function.name(),
                                done.reused() ? "reused" : "deployed",
                                done.version().version());
                        return done.version();
                    },
                    BackgroundDeployments.EXECUTOR);
            deployment.whenComplete((version, failure) -> {
                Throwable cause = failure != null && failure.getCause() != null ? failure.getCause() : failure;
                if (cause instanceof ChalkComputeException known) {
                    // the server's answer says what is wrong: its stack frames are the SDK's, not the user's
                    log.error("{}: deployment failed: {}", function.name(), known.getMessage());
                } else if (cause != null) {
                    log.error("{}: deployment failed", function.name(), cause);
                }
            });
            DeployedFunction handle = new DeployedFunction(this, function, served, deployment);
            BackgroundDeployments.watch(handle);
            handles.add(handle);
        }
        java.util.concurrent.CompletableFuture.allOf(handles.stream()
                        .map(h -> h.deploymentUnobserved())
                        .toArray(java.util.concurrent.CompletableFuture[]::new))
                .whenComplete((ignored, failure) -> code.thenAccept(CodeSnapshot::close));
        return List.copyOf(handles);
    }

    /**
     * The functions deployed in the environment, by name, each described by its current version: its parameters
     * (with their defaults) and result as Java types read from the catalog's Arrow schemas, and its description. See
     * {@link CatalogFunction}.
     *
     * @return the functions, ordered by name
     * @throws ChalkComputeException when the server cannot be reached
     */
    public List<CatalogFunction> list() {
        List<CatalogFunction> functions = new ArrayList<>();
        String cursor = null;
        do {
            var request = ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsRequest.newBuilder();
            if (cursor != null) {
                request.setCursor(cursor);
            }
            var page = ServerCall.run(ResourceKind.FUNCTION, () -> catalog.listExternalFunctions(request.build()));
            for (var summary : page.getFunctionsList()) {
                try {
                    functions.add(CatalogFunction.of(function(summary.getName()).getCurrentVersion()));
                } catch (ai.chalk.compute.error.FunctionNotFoundException e) {
                    log.debug("{} was deleted while listing", summary.getName());
                }
            }
            cursor = page.hasNextCursor() && !page.getNextCursor().isEmpty() ? page.getNextCursor() : null;
        } while (cursor != null);
        functions.sort(java.util.Comparator.comparing(CatalogFunction::name));
        return functions;
    }

    /**
     * An implementation of an interface whose methods call the deployed functions of their names; see
     * {@link ai.chalk.compute.function.remote.FunctionProxy}.
     * <pre>{@code
     * interface PricingApi { double price(String sku, int quantity); }
     * double p = client.functions().proxy(PricingApi.class).price("sku-1", 3);
     * }</pre>
     *
     * @param api the interface
     * @param <T> the interface
     * @return the proxy
     * @throws IllegalArgumentException when {@code api} is not an interface
     */
    public <T> T proxy(Class<T> api) {
        return ai.chalk.compute.function.remote.FunctionProxy.create(client.get(), api);
    }

    /**
     * A function's current version: the one calls go to.
     *
     * @param functionName the function's name
     * @return its current version
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     */
    public FunctionVersion current(String functionName) {
        return versions.current(functionName);
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
        return ensure(function, served, code, worker, forceNewVersion).version();
    }

    /**
     * Deploys a function as {@link #deploy(FunctionDefinition, List, CodeSnapshot, WorkerMode, boolean)} does, and
     * says whether the version serving it is new or one the server already had, unchanged: a progress line or a log
     * should not say "deployed" of a version that was only found again. The catalog's answer does not say which, so
     * the function's current version is asked for first (one more call, and none when a new version is forced).
     *
     * @param function        the function
     * @param served          every function its deployment serves, {@code function} included
     * @param code            the code to run it from
     * @param worker          how the worker loads it
     * @param forceNewVersion create a new version even when nothing changed
     * @return the version serving it now, and whether it was reused
     * @throws ChalkComputeException when the server refuses the deploy
     */
    public Deployment ensure(
            FunctionDefinition function,
            List<FunctionDefinition> served,
            CodeSnapshot code,
            WorkerMode worker,
            boolean forceNewVersion) {
        Optional<String> before = forceNewVersion ? Optional.empty() : currentVersionId(function.name());
        FunctionVersion version = deployVersion(function, served, code, worker, forceNewVersion);
        return new Deployment(version, before.isPresent() && before.get().equals(version.id()));
    }

    /**
     * What a deploy did.
     *
     * @param version the version serving the function now
     * @param reused  whether it was the function's current version already (nothing had changed), rather than new
     */
    public record Deployment(FunctionVersion version, boolean reused) {

        /** Checks for null. */
        public Deployment {
            Objects.requireNonNull(version, "version");
        }
    }

    /** The function's current version's id; empty when there is no such function yet. */
    private Optional<String> currentVersionId(String name) {
        try {
            return Optional.of(catalog.getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                    .setFunctionName(name)
                                    .build())
                            .getExternalFunction()
                            .getCurrentVersion()
                            .getId())
                    .filter(id -> !id.isEmpty());
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == io.grpc.Status.Code.NOT_FOUND) {
                return Optional.empty();
            }
            throw ServerCall.failure(ResourceKind.FUNCTION, e);
        }
    }

    private FunctionVersion deployVersion(
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
        return versions.versions(functionName);
    }

    /** Where waits for readiness show: the client's display. */
    ai.chalk.compute.progress.ProgressDisplay progress() {
        return client.get().progress();
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
     * The most recent lines a function's replicas wrote (what it prints and logs to the console), oldest first: the
     * lines of its calls, and what its replicas wrote outside calls. The server keeps the last
     * {@value #MAX_LOG_LINES} lines of each function, in memory.
     *
     * @param functionName the function's name
     * @return up to 100 lines
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     * @throws ChalkComputeException                            when the server cannot be reached
     */
    public List<FunctionLogLine> logs(String functionName) {
        return logs(functionName, 100);
    }

    /**
     * The most recent lines a function's replicas wrote, oldest first, as {@link #logs(String)}.
     *
     * @param functionName the function's name
     * @param limit        how many lines at most, 1 to {@value #MAX_LOG_LINES}
     * @return the lines
     * @throws IllegalArgumentException                         when the limit is out of range
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function is unknown
     * @throws ChalkComputeException                            when the server cannot be reached
     */
    public List<FunctionLogLine> logs(String functionName, int limit) {
        if (limit < 1 || limit > MAX_LOG_LINES) {
            throw new IllegalArgumentException("limit must be between 1 and " + MAX_LOG_LINES + ", got " + limit);
        }
        GetFunctionLogsResponse response = ServerCall.run(
                ResourceKind.FUNCTION,
                () -> logs.getFunctionLogs(GetFunctionLogsRequest.newBuilder()
                        .setFunctionName(functionName)
                        .setLimit(limit)
                        .build()));
        return response.getLogsList().stream()
                .map(e -> new FunctionLogLine(
                        java.time.Instant.ofEpochSecond(
                                e.getTimestamp().getSeconds(), e.getTimestamp().getNanos()),
                        e.getLabelsOrDefault("replica", ""),
                        Optional.ofNullable(e.getLabelsMap().get("function")),
                        e.getLabelsOrDefault("stream", "stdout"),
                        e.getMessage()))
                .toList();
    }

    /**
     * Makes a version current again: all of the function's traffic goes to it.
     *
     * @param functionId the function's stable id
     * @param versionId  the version's id
     * @throws ai.chalk.compute.error.FunctionNotFoundException when either is unknown
     */
    public void rollback(String functionId, String versionId) {
        versions.rollback(functionId, versionId);
    }

    /**
     * Deletes a function and all its versions.
     *
     * @param functionName the function's name
     * @throws ai.chalk.compute.error.FunctionNotFoundException when it is unknown
     */
    public void delete(String functionName) {
        versions.delete(functionName);
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
