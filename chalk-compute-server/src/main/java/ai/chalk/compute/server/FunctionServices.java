package ai.chalk.compute.server;

import ai.chalk.compute.server.auth.WorkloadTokens;
import ai.chalk.compute.server.blob.BlobCollection;
import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.exec.ReceivedMessages;
import ai.chalk.compute.server.function.AsyncRemoteCallServiceV1;
import ai.chalk.compute.server.function.ExternalFunctionCatalogServiceV1;
import ai.chalk.compute.server.function.FunctionCalls;
import ai.chalk.compute.server.function.FunctionDeployments;
import ai.chalk.compute.server.function.FunctionLogServiceV1;
import ai.chalk.compute.server.function.FunctionWorkers;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.sandbox.SandboxManager;
import ai.chalk.compute.server.scalinggroup.ContainerRunners;
import ai.chalk.compute.server.scalinggroup.ScalingGroupManagerServiceV1;
import ai.chalk.compute.server.scalinggroup.ScalingGroups;
import ai.chalk.compute.server.secret.LocalSecretSweep;
import ai.chalk.compute.server.secret.Secrets;
import ai.chalk.compute.server.store.BlobOwnerStore;
import ai.chalk.compute.server.store.CallStore;
import ai.chalk.compute.server.store.Database;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.ScalingGroupStore;
import ai.chalk.compute.server.threads.DaemonThreads;
import ai.chalk.compute.server.worker.CodeSnapshots;
import ai.chalk.compute.server.worker.FunctionLogs;
import ai.chalk.compute.server.worker.ServerAccess;
import ai.chalk.compute.server.worker.ServerSocketForWorkers;
import ai.chalk.compute.server.worker.WorkerImageCheck;
import ai.chalk.compute.server.worker.WorkerJava;
import ai.chalk.compute.server.worker.WorkerPools;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The function catalog, scaling groups and their workers, wired together for {@link ComputeServer}. */
final class FunctionServices implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(FunctionServices.class);

    private final BlobStore blobs;
    private final BlobOwnerStore blobOwners;
    private final ExecutorService executor;
    private final WorkerPools pools;
    private final ScalingGroups groups;
    private final ScheduledFuture<?> upkeep;
    private final ExternalFunctionCatalogServiceV1 catalog;
    private final AsyncRemoteCallServiceV1 asyncCalls;
    private final ScalingGroupManagerServiceV1 scalingGroups;
    private final FunctionLogServiceV1 logs;
    private final ServerSocketForWorkers workerSocket;
    private final FunctionCalls calls;
    private final BlobCollection.References codeBlobs;

    private FunctionServices(
            ServerSocketForWorkers workerSocket,
            BlobStore blobs,
            BlobOwnerStore blobOwners,
            ExecutorService executor,
            WorkerPools pools,
            ScalingGroups groups,
            ScheduledFuture<?> upkeep,
            ExternalFunctionCatalogServiceV1 catalog,
            AsyncRemoteCallServiceV1 asyncCalls,
            ScalingGroupManagerServiceV1 scalingGroups,
            FunctionLogServiceV1 logs,
            FunctionCalls calls,
            BlobCollection.References codeBlobs) {
        this.calls = calls;
        this.codeBlobs = codeBlobs;
        this.logs = logs;
        this.workerSocket = workerSocket;
        this.blobs = blobs;
        this.blobOwners = blobOwners;
        this.executor = executor;
        this.pools = pools;
        this.groups = groups;
        this.upkeep = upkeep;
        this.catalog = catalog;
        this.asyncCalls = asyncCalls;
        this.scalingGroups = scalingGroups;
    }

    /**
     * @param java         what function workers run on
     * @param localSecrets hears that functions, versions and scaling groups were deleted
     * @param callBytes    the arguments of the calls under way or queued, per environment
     */
    static FunctionServices start(
            Path dataDir,
            Database database,
            FunctionStore functionStore,
            ScalingGroupStore groupStore,
            SandboxRuntime runtime,
            SandboxManager sandboxes,
            ScheduledExecutorService scheduler,
            Duration workerReadyTimeout,
            WorkerJava java,
            WorkloadTokens workloadTokens,
            Secrets secrets,
            LocalSecretSweep localSecrets,
            long diskReserve,
            long blobStoragePerEnvironment,
            EnvironmentBytes callBytes,
            ReceivedMessages fromReplicas)
            throws IOException {
        BlobStore blobs = new BlobStore(dataDir.resolve("blobs"), diskReserve);
        BlobOwnerStore blobOwners = new BlobOwnerStore(
                database,
                () -> {
                    try {
                        return blobs.digests();
                    } catch (IOException e) {
                        throw new UncheckedIOException("cannot list the blobs in " + dataDir.resolve("blobs"), e);
                    }
                },
                hex -> blobs.size(new BlobDigest(hex)).orElse(0));
        blobs.limitEach(
                blobOwners,
                blobStoragePerEnvironment >= 0
                        ? blobStoragePerEnvironment
                        : Math.max(
                                0, (Files.getFileStore(dataDir.resolve("blobs")).getTotalSpace() - diskReserve) / 2));
        ExecutorService executor = Executors.newCachedThreadPool(DaemonThreads.named("chalk-compute-functions"));
        CodeSnapshots code =
                new CodeSnapshots(blobs, dataDir.resolve("functions").resolve("code"), diskReserve);
        ScalingGroups groups = new ScalingGroups(groupStore, localSecrets);
        ServerSocketForWorkers workerSocket =
                new ServerSocketForWorkers(dataDir.resolve("functions").resolve("server"));
        sandboxes.whenEnded(workerSocket::sandboxEnded);
        FunctionLogs logs = new FunctionLogs();
        WorkerPools pools = new WorkerPools(
                runtime,
                sandboxes::place,
                java,
                dataDir.resolve("functions").resolve("run"),
                executor,
                workerSocket.dir().map(dir -> new ServerAccess(dir, workloadTokens)),
                logs,
                fromReplicas);
        FunctionWorkers workers = new FunctionWorkers(
                functionStore,
                code,
                pools,
                workerReadyTimeout,
                groups::recordRevisionStatus,
                secrets,
                sandboxes.imageNames());
        groups.register(ScalingGroups.CONTAINER, new ContainerRunners(sandboxes, executor));
        groups.register(ScalingGroups.FUNCTION, workers);
        FunctionDeployments deployments = new FunctionDeployments(
                functionStore,
                groups,
                code,
                java,
                new WorkerImageCheck(runtime, sandboxes::place, java, executor),
                blobOwners,
                secrets,
                localSecrets,
                sandboxes.imageNames(),
                pools);
        CallStore callStore = new CallStore(database);
        callStore.failUnfinished(
                "the server restarted while the call was queued or running; call again",
                ai.chalk.compute.proto.common.v1.ChalkError.newBuilder()
                        .setMessage("the server restarted while the" + " call was queued or running; call again")
                        .build()
                        .toByteArray());
        FunctionCalls calls = new FunctionCalls(workers, callStore, executor, callBytes);
        groups.recover();
        AtomicLong nextSweep = new AtomicLong();
        ScheduledFuture<?> upkeep = scheduler.scheduleWithFixedDelay(
                () -> {
                    Instant now = Instant.now();
                    groups.tick(now);
                    // unread results of queued calls go a day after they finished, looked for every ten minutes
                    if (now.getEpochSecond() >= nextSweep.get()) {
                        nextSweep.set(now.getEpochSecond() + 600);
                        try {
                            callStore.forgetFinishedBefore(now.minus(CallStore.KEPT_UNREAD));
                        } catch (RuntimeException e) {
                            log.warn("Forgetting the unread results of queued calls failed: {}", e.toString());
                        }
                    }
                },
                1,
                1,
                TimeUnit.SECONDS);
        return new FunctionServices(
                workerSocket,
                blobs,
                blobOwners,
                executor,
                pools,
                groups,
                upkeep,
                new ExternalFunctionCatalogServiceV1(deployments, calls, code),
                new AsyncRemoteCallServiceV1(deployments, calls),
                new ScalingGroupManagerServiceV1(groups),
                new FunctionLogServiceV1(deployments, logs),
                calls,
                deployments::eachCodeBlob);
    }

    /** Serves the server's services to replicas, on their socket, counting their messages in {@code received}. */
    void serveWorkers(
            List<ServerServiceDefinition> services, int maxInboundMessageBytes, ServerStreamTracer.Factory received)
            throws IOException {
        workerSocket.start(services, maxInboundMessageBytes, received);
    }

    /** The directory of the server's socket for deployed code, if it can serve here. */
    Optional<Path> serverSocketDir() {
        return workerSocket.dir();
    }

    BlobStore blobs() {
        return blobs;
    }

    BlobOwnerStore blobOwners() {
        return blobOwners;
    }

    /** The code blobs of the function versions that can serve. */
    BlobCollection.References codeBlobs() {
        return codeBlobs;
    }

    ExternalFunctionCatalogServiceV1 catalog() {
        return catalog;
    }

    AsyncRemoteCallServiceV1 asyncCalls() {
        return asyncCalls;
    }

    ScalingGroupManagerServiceV1 scalingGroups() {
        return scalingGroups;
    }

    FunctionLogServiceV1 logs() {
        return logs;
    }

    /** Calls of function versions through their replica pools: what evaluation runs call tasks and scorers with. */
    FunctionCalls calls() {
        return calls;
    }

    /** The functions' cached pool, shut down with them. */
    ExecutorService executor() {
        return executor;
    }

    @Override
    public void close() {
        workerSocket.shutdown();
        upkeep.cancel(false);
        groups.close();
        pools.close();
        executor.shutdownNow();
        workerSocket.close();
    }
}
