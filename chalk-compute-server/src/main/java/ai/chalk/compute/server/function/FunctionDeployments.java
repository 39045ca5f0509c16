package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.image.ImageNames;
import ai.chalk.compute.server.sandbox.ContainerSpecs;
import ai.chalk.compute.server.sandbox.NetworkPolicies;
import ai.chalk.compute.server.scalinggroup.ScalingGroups;
import ai.chalk.compute.server.scalinggroup.ScalingSpecs;
import ai.chalk.compute.server.secret.LocalSecretSweep;
import ai.chalk.compute.server.secret.Secrets;
import ai.chalk.compute.server.store.BlobOwnerStore;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.FunctionStore.FunctionRecord;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import ai.chalk.compute.server.store.ScalingGroupStore.GroupRecord;
import ai.chalk.compute.server.worker.CodeManifest;
import ai.chalk.compute.server.worker.CodeSnapshots;
import ai.chalk.compute.server.worker.WorkerImageCheck;
import ai.chalk.compute.server.worker.WorkerJava;
import ai.chalk.compute.server.worker.WorkerLaunch;
import ai.chalk.compute.server.worker.WorkerPools;
import com.google.protobuf.CodedOutputStream;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.regex.Pattern;

/**
 * Function deployments: the protocol's ensure (reuse an equal version, refuse missing code, else version N+1 with
 * a new revision of the function's scaling group), traffic (rollback), deletion, and finding functions and
 * versions. A deployment whose workers could not start (a worker image that is missing or has no Java) is refused.
 * Functions belong to an environment: names are unique within it, its code must be blobs it uploaded, its scaling
 * group is the environment's, and another environment's functions and versions answer NOT_FOUND as unknown ones.
 */
public final class FunctionDeployments {

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,254}");

    private final FunctionStore store;
    private final BlobOwnerStore blobOwners;
    private final ScalingGroups groups;
    private final CodeSnapshots code;
    private final WorkerJava java;
    private final WorkerImageCheck workerCheck;
    private final Secrets secrets;
    private final ImageNames imageNames;
    private final LocalSecretSweep localSecrets;
    private final WorkerPools pools;

    /**
     * What an ensure answered.
     *
     * @param function the function
     * @param version  the version (new or reused)
     * @param created  whether it is new
     */
    public record Deployed(FunctionRecord function, VersionRecord version, boolean created) {}

    /**
     * @param java         what workers run on, for messages
     * @param workerCheck  says whether workers can start, before a deployment is accepted
     * @param blobOwners   which environment uploaded which code blobs
     * @param secrets      checks a deployment's secret_refs before it is accepted
     * @param localSecrets hears that a function or version was deleted, so the secrets saved for its local values
     *                     may go
     */
    public FunctionDeployments(
            FunctionStore store,
            ScalingGroups groups,
            CodeSnapshots code,
            WorkerJava java,
            WorkerImageCheck workerCheck,
            BlobOwnerStore blobOwners,
            Secrets secrets,
            LocalSecretSweep localSecrets,
            ImageNames imageNames,
            WorkerPools pools) {
        this.imageNames = imageNames;
        this.pools = pools;
        this.secrets = secrets;
        this.localSecrets = localSecrets;
        this.store = store;
        this.blobOwners = blobOwners;
        this.groups = groups;
        this.code = code;
        this.java = java;
        this.workerCheck = workerCheck;
    }

    public FunctionStore store() {
        return store;
    }

    public ScalingGroups groups() {
        return groups;
    }

    /** The protocol's ensure, in an environment; see the class comment. */
    public Deployed ensure(String environment, CreateExternalFunctionVersionRequest request) {
        String name = checkName(request.getFunctionName());
        if (request.getConfig().hasSchedule()) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("config.schedule: this server does not run scheduled"
                            + " functions; deploy without a schedule and call the function instead")
                    .asRuntimeException();
        }
        // refused rather than ignored: a limit the caller counts on must not silently not apply
        if (request.getConfig().hasRateLimit()) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "config.rate_limit: this server does not enforce rate"
                                    + " limits; bound the load with concurrency.max_concurrent and spec.scaling_spec.max_replicas")
                    .asRuntimeException();
        }
        if (request.getConfig().hasQueue()) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("config.queue: this server does not bound the queue of"
                            + " pending calls; PurgeQueue removes pending calls")
                    .asRuntimeException();
        }
        FunctionOptions options = FunctionOptions.of(request.getConfig()).requireNew();
        refuseUnsupported(request.getSpec());
        checkSecretRefs(environment, request.getSpec());
        ScalingSpecs.check("spec", request.getSpec());
        ContainerSpecs.limits(request.getSpec().getContainerSpec(), "spec.container_spec"); // malformed: refused now
        byte[] bytes = canonical(request);
        Optional<Deployed> reused = reuse(environment, name, bytes);
        if (reused.isPresent()) {
            return reused.get(); // its image was checked when it was deployed
        }
        String image = imageNames.forRuntime(
                environment, request.getSpec().getContainerSpec().getImage().trim(), "spec.container_spec.image");
        (image.isEmpty() ? workerCheck.problem(environment) : workerCheck.problem(environment, image))
                .ifPresent(problem -> {
                    throw Status.FAILED_PRECONDITION
                            .withDescription((image.isEmpty() ? "" : "spec.container_spec.image: ") + problem)
                            .asRuntimeException();
                });
        // unpacked outside this monitor: one tenant's long unpack must not hold every other deploy, route and delete
        materialise(environment, options.code());
        synchronized (this) {
            reused = reuse(environment, name, bytes); // an equal deploy may have come first meanwhile
            if (reused.isPresent()) {
                return reused.get();
            }
            Optional<FunctionRecord> fn = store.liveFunctionNamed(environment, name);
            Optional<GroupRecord> group = groups.store().liveGroupNamed(environment, name);
            if (group.isPresent() && !group.get().kind().equals(ScalingGroups.FUNCTION)) {
                throw Status.FAILED_PRECONDITION
                        .withDescription("a scaling group named \"" + name + "\" exists and"
                                + " serves no function; delete it or name the function differently")
                        .asRuntimeException();
            }
            Instant now = Instant.now();
            FunctionRecord f = fn.orElseGet(() -> store.insertFunction(environment, ScalingGroups.id("fn"), name, now));
            String revisionId = ScalingGroups.id("sgr");
            VersionRecord v = store.insertVersion(
                    f, ScalingGroups.id("fnv"), store.highestVersion(f.id()) + 1, bytes, revisionId, now);
            ScalingGroupSpec spec = request.getSpec().toBuilder()
                    .setContainerSpec(
                            request.getSpec().getContainerSpec().toBuilder().setName(name))
                    .build();
            if (group.isPresent()) {
                groups.addRevision(group.get(), spec, revisionId);
            } else {
                groups.create(environment, name, ScalingGroups.FUNCTION, spec, revisionId);
            }
            return new Deployed(store.function(f.id()).orElseThrow(), v, true);
        }
    }

    /** The function's current version when it was deployed from the same request, to be reused. */
    private synchronized Optional<Deployed> reuse(String environment, String name, byte[] request) {
        Optional<FunctionRecord> fn = store.liveFunctionNamed(environment, name);
        return fn.flatMap(FunctionRecord::currentVersionId)
                .flatMap(store::version)
                .filter(v -> Arrays.equals(v.request(), request))
                .map(v -> new Deployed(fn.get(), v, false));
    }

    /** What workers here cannot honour is refused rather than ignored. */
    private void refuseUnsupported(ScalingGroupSpec spec) {
        var c = spec.getContainerSpec();
        if (!c.getImage().isBlank() && java.image().isEmpty()) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("spec.container_spec.image \"" + c.getImage()
                            + "\": on the " + "local runtime function workers run the server's Java on the host's root;"
                            + " leave image empty, or run the server with --runtime docker, where a function's image (with"
                            + " Java " + WorkerJava.MIN_FEATURE + " or newer) is its workers' image")
                    .asRuntimeException();
        }
        if (c.hasResources()
                && c.getResources().hasGpu()
                && !c.getResources().getGpu().isBlank()) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "spec.container_spec.resources.gpu: this server has no" + " GPUs to give function workers")
                    .asRuntimeException();
        }
    }

    /**
     * Resolves the references once, now, so that a missing secret or a clash is refused at deploy rather than found
     * by every replica that fails to start; the values are dropped at once (replicas read them as they start).
     */
    private void checkSecretRefs(String environment, ScalingGroupSpec spec) {
        var c = spec.getContainerSpec();
        if (c.hasNetworkPolicy()) {
            // the policy's fields and header secrets, checked now as the secret references are
            NetworkPolicies.grant(c.getNetworkPolicy(), "spec.container_spec.network_policy", secrets, environment);
        }
        if (c.getSecretRefsCount() == 0) {
            return;
        }
        for (String name : secrets.resolve(environment, c.getSecretRefsList(), "spec.container_spec.secret_refs")
                .keySet()) {
            if (c.containsEnvVars(name)) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("spec.container_spec.env_vars sets " + name + ", which"
                                + " secret_refs sets too; remove it from one of them (or give the secret an alias)")
                        .asRuntimeException();
            }
        }
    }

    private void materialise(String environment, BlobDigest digest) {
        try {
            // bytes another environment uploaded are missing here: using them would tell the deployer they exist
            List<BlobDigest> missing = code.missing(digest, d -> blobOwners.owns(environment, d.hex()));
            if (!missing.isEmpty()) {
                throw MissingCode.refusal(missing);
            }
            code.materialise(digest, WorkerLaunch.CODE_MOUNT);
        } catch (IOException | UncheckedIOException e) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("code " + digest + " could not be unpacked: " + e.getMessage())
                    .asRuntimeException();
        }
    }

    /**
     * Gives {@code use} the environment and digest (hex) of each code blob, manifest and entries, of the versions not
     * deleted: any of them can serve again, so those blobs are never collected.
     */
    public void eachCodeBlob(BiConsumer<String, String> use) {
        Map<BlobDigest, List<BlobDigest>> entries = new HashMap<>();
        store.eachLiveVersionRequest((environment, request) -> {
            String code;
            try {
                code = CreateExternalFunctionVersionRequest.parseFrom(request)
                        .getConfig()
                        .getOptionsOrDefault(FunctionOptions.CODE, "");
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                // which blobs it needs is unknown: none may be collected
                throw new IllegalStateException("a stored function version request is unreadable", e);
            }
            BlobDigest manifest = BlobDigest.parse("a stored function version's code", code);
            use.accept(environment, manifest.hex());
            entries.computeIfAbsent(manifest, this::entries).forEach(e -> use.accept(environment, e.hex()));
        });
    }

    /**
     * The blobs a code manifest lists. One that cannot be read stops the collection: its entries may be in use.
     *
     * @throws UncheckedIOException when the manifest cannot be read
     */
    private List<BlobDigest> entries(BlobDigest manifest) {
        try {
            return code.manifest(manifest).entries().stream()
                    .map(CodeManifest.Entry::digest)
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException("the code manifest " + manifest + " cannot be read", e);
        }
    }

    /** Routes a function's traffic to one of its versions (rollback); its revision serves again. */
    public synchronized FunctionRecord route(FunctionRecord f, VersionRecord v) {
        if (!v.functionId().equals(f.id()) || v.deletedAt().isPresent()) {
            throw Status.NOT_FOUND
                    .withDescription("function " + f.name() + " has no live version " + v.id())
                    .asRuntimeException();
        }
        store.setCurrent(f.id(), v.id(), Instant.now());
        groups.route(group(f), v.revisionId());
        return store.function(f.id()).orElseThrow();
    }

    /**
     * Deletes a function, its versions and its scaling group: its replicas stop, those a call naming an older version
     * started included.
     */
    public synchronized void delete(FunctionRecord f) {
        groups.store()
                .liveGroupNamed(f.environment(), f.name())
                .filter(g -> g.kind().equals(ScalingGroups.FUNCTION))
                .ifPresent(groups::delete);
        int highest = store.highestVersion(f.id());
        store.deleteFunction(f.id(), Instant.now());
        for (int n = 1; n <= highest; n++) {
            store.version(f.id(), n).ifPresent(v -> pools.delete(v.revisionId()));
        }
        localSecrets.soon();
    }

    /** Deletes a version that does not serve. */
    public synchronized void delete(VersionRecord v) {
        FunctionRecord f = store.function(v.functionId()).orElseThrow();
        if (f.currentVersionId().equals(Optional.of(v.id()))) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("version " + v.version() + " of " + f.name()
                            + " serves the function's traffic: route it to another version (UpdateExternalFunction) or delete"
                            + " the function")
                    .asRuntimeException();
        }
        store.deleteVersion(v.id(), Instant.now());
        // replicas a call naming this version started (the group's own serve its current version): a version deleted
        // because its code was bad kept running, and kept being given the environment's secrets and a token
        pools.delete(v.revisionId());
        localSecrets.soon();
    }

    /** The function's scaling group. */
    public GroupRecord group(FunctionRecord f) {
        return groups.store()
                .liveGroupNamed(f.environment(), f.name())
                .orElseThrow(() -> Status.FAILED_PRECONDITION
                        .withDescription("function " + f.name() + " has no scaling group")
                        .asRuntimeException());
    }

    /** One of the environment's functions by id or name; NOT_FOUND otherwise (another environment's included). */
    public FunctionRecord function(String environment, String id, String name, boolean includeDeleted) {
        if (id.isEmpty() && name.isEmpty()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("give the function's id or name")
                    .asRuntimeException();
        }
        Optional<FunctionRecord> f = !id.isEmpty()
                ? store.function(id).filter(x -> x.environment().equals(environment))
                : store.liveFunctionNamed(environment, name);
        return f.filter(x -> includeDeleted || x.deletedAt().isEmpty())
                .orElseThrow(() -> Status.NOT_FOUND
                        .withDescription("no function " + (id.isEmpty() ? "named \"" + name + "\"" : "with id " + id)
                                + "; ListExternalFunctions lists them")
                        .asRuntimeException());
    }

    /** One of the environment's versions by key: the named version, or the function's current one. */
    public VersionRecord version(String environment, ExternalFunctionVersionKey key, boolean includeDeleted) {
        FunctionRecord f = function(
                environment,
                key.hasFunctionId() ? key.getFunctionId() : "",
                key.hasFunctionName() ? key.getFunctionName() : "",
                includeDeleted);
        Optional<VersionRecord> v = key.hasVersion()
                ? store.version(f.id(), key.getVersion())
                : f.currentVersionId().flatMap(store::version);
        return v.filter(x -> includeDeleted || x.deletedAt().isEmpty())
                .orElseThrow(() -> Status.NOT_FOUND
                        .withDescription("function " + f.name() + " has no "
                                + (key.hasVersion() ? "version " + key.getVersion() : "current version")
                                + "; ListExternalFunctionVersions lists them")
                        .asRuntimeException());
    }

    /** One of the environment's versions by id; NOT_FOUND otherwise (another environment's included). */
    public VersionRecord version(String environment, String id, boolean includeDeleted) {
        return store.version(id)
                .filter(x -> x.environment().equals(environment))
                .filter(x -> includeDeleted || x.deletedAt().isEmpty())
                .orElseThrow(() -> Status.NOT_FOUND
                        .withDescription(
                                "no function version with id \"" + id + "\"; ListExternalFunctionVersions lists them")
                        .asRuntimeException());
    }

    private static String checkName(String name) {
        if (!NAME.matcher(name).matches()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("function_name \"" + name + "\" must be 1 to 255 letters,"
                            + " digits, '_', '.' or '-', starting with a letter or digit")
                    .asRuntimeException();
        }
        return name;
    }

    /** The request's deterministic serialisation: equal requests give equal bytes. */
    static byte[] canonical(CreateExternalFunctionVersionRequest request) {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            CodedOutputStream c = CodedOutputStream.newInstance(out);
            c.useDeterministicSerialization();
            request.writeTo(c);
            c.flush();
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
