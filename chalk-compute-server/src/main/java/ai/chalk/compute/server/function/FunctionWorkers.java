package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.image.ImageNames;
import ai.chalk.compute.server.sandbox.ContainerSpecs;
import ai.chalk.compute.server.sandbox.NetworkPolicies;
import ai.chalk.compute.server.scalinggroup.RevisionRunner;
import ai.chalk.compute.server.scalinggroup.RunnerFactory;
import ai.chalk.compute.server.scalinggroup.ScalingSpecs;
import ai.chalk.compute.server.secret.Secrets;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.ScalingGroupStore;
import ai.chalk.compute.server.worker.CodeSnapshots;
import ai.chalk.compute.server.worker.PoolStatus;
import ai.chalk.compute.server.worker.ReplicaPool;
import ai.chalk.compute.server.worker.WorkerLaunch;
import ai.chalk.compute.server.worker.WorkerPools;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The replica pools of function versions, and the scaling groups' runner for groups that serve functions. Versions of
 * different functions whose replicas would be started alike share one pool ({@link #unit}).
 */
public final class FunctionWorkers implements RunnerFactory {

    private final FunctionStore functions;
    private final CodeSnapshots code;
    private final WorkerPools pools;
    private final Duration readyTimeout;
    private final BiConsumer<String, PoolStatus> statusSink;
    private final Secrets secrets;
    private final ImageNames imageNames;

    /**
     * @param statusSink hears every pool's status by revision id (the scaling groups record the serving one's)
     * @param secrets    resolves a version's secret_refs as each of its replicas starts
     */
    public FunctionWorkers(
            FunctionStore functions,
            CodeSnapshots code,
            WorkerPools pools,
            Duration readyTimeout,
            BiConsumer<String, PoolStatus> statusSink,
            Secrets secrets,
            ImageNames imageNames) {
        this.imageNames = imageNames;
        this.secrets = secrets;
        this.statusSink = statusSink;
        this.functions = functions;
        this.code = code;
        this.pools = pools;
        this.readyTimeout = readyTimeout;
    }

    /** The pool serving a version (started on first use). */
    public ReplicaPool poolFor(FunctionStore.VersionRecord v) {
        Optional<ReplicaPool> serving = pools.existing(v.revisionId());
        if (serving.isPresent()) {
            return serving.get(); // the common case: no need to read the version's request
        }
        CreateExternalFunctionVersionRequest request = request(v);
        ScalingGroupSpec spec = request.getSpec();
        // made (its code unpacked where it has to be) before the pools' lock, which a slow unpack would hold for all
        WorkerLaunch launch = launch(v, request);
        return pools.pool(
                v.revisionId(),
                unit(v, request),
                () -> launch,
                () -> new ReplicaPool.Scale(
                        spec.getScalingSpec().getMinReplicas(),
                        ScalingSpecs.max(spec),
                        ScalingSpecs.shutdownDelay(spec),
                        FunctionOptions.of(request.getConfig()).calls()),
                s -> statusSink.accept(v.revisionId(), s));
    }

    /**
     * What makes two versions' replicas interchangeable: the environment and the request less what only concerns
     * calls of the one function (its name, its schemas, its call timeout). The functions of one bean, each deployed
     * with the whole bean's {@code chalk_compute.functions}, get equal units and so share replicas; a function with
     * deployment settings of its own (image, resources, replicas, env, secrets, concurrency, retries) does not.
     */
    static String unit(FunctionStore.VersionRecord v, CreateExternalFunctionVersionRequest request) {
        CreateExternalFunctionVersionRequest.Builder shared =
                request.toBuilder().clearFunctionName().clearInputArrowSchema().clearOutputArrowSchema();
        shared.getConfigBuilder().removeOptions(FunctionOptions.TIMEOUT);
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
                    .digest(FunctionDeployments.canonical(shared.build()));
            return v.environment() + "/" + java.util.HexFormat.of().formatHex(digest);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    private WorkerLaunch launch(FunctionStore.VersionRecord v, CreateExternalFunctionVersionRequest request) {
        FunctionOptions o = FunctionOptions.of(request.getConfig());
        var refs = request.getSpec().getContainerSpec().getSecretRefsList();
        try {
            return new WorkerLaunch(
                    v.revisionId(),
                    code.materialise(o.code(), WorkerLaunch.CODE_MOUNT),
                    o.functionsOption(),
                    o.worker(),
                    request.getSpec().getContainerSpec().getEnvVarsMap(),
                    readyTimeout,
                    o.calls().maxConcurrent(),
                    imageNames.forRuntime(
                            v.environment(),
                            request.getSpec().getContainerSpec().getImage().trim(),
                            "spec.container_spec.image"),
                    ContainerSpecs.limits(request.getSpec().getContainerSpec(), "spec.container_spec"),
                    v.environment(),
                    "function:" + v.functionId() + "/v" + v.version(),
                    () -> refs.isEmpty()
                            ? java.util.Map.of()
                            : secrets.resolve(v.environment(), refs, "spec.container_spec.secret_refs"),
                    () -> NetworkPolicies.grant(
                            request.getSpec().getContainerSpec().hasNetworkPolicy()
                                    ? request.getSpec().getContainerSpec().getNetworkPolicy()
                                    : null,
                            "spec.container_spec.network_policy",
                            secrets,
                            v.environment()));
        } catch (IOException e) {
            throw new UncheckedIOException("materialising code " + o.code() + " failed: " + e.getMessage(), e);
        }
    }

    /** A version's stored request. */
    public static CreateExternalFunctionVersionRequest request(FunctionStore.VersionRecord v) {
        try {
            return CreateExternalFunctionVersionRequest.parseFrom(v.request());
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("stored request of function version " + v.id() + " is unreadable", e);
        }
    }

    @Override
    public RevisionRunner start(
            ScalingGroupStore.GroupRecord group,
            ScalingGroupStore.RevisionRecord revision,
            ScalingGroupSpec spec,
            Consumer<PoolStatus> onStatus) {
        FunctionStore.VersionRecord v = functions
                .versionForRevision(revision.id())
                .orElseThrow(
                        () -> new IllegalStateException("revision " + revision.id() + " runs no function version"));
        ReplicaPool pool = poolFor(v); // its status reaches the group through the status sink
        pool.fill(); // a pool started earlier by a call naming this version gets its min_replicas now
        String revisionId = revision.id();
        return new RevisionRunner() {
            @Override
            public PoolStatus status() {
                return pool.status();
            }

            @Override
            public void tick(Instant now) {
                pool.reap(now);
            }

            @Override
            public void close() {
                pools.retire(revisionId);
            }
        };
    }
}
