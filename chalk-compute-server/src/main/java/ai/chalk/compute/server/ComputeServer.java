package ai.chalk.compute.server;

import ai.chalk.compute.server.ai.AiRouterOptions;
import ai.chalk.compute.server.ai.AiRouterServiceV1;
import ai.chalk.compute.server.auth.Authentication;
import ai.chalk.compute.server.blob.BlobCollection;
import ai.chalk.compute.server.blob.BlobServiceV1;
import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.dataset.DatasetMetadataServiceV1;
import ai.chalk.compute.server.egress.EgressOptions;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.evaluation.EvaluationServiceV1;
import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.exec.MemoryBudgets;
import ai.chalk.compute.server.exec.ProcessThreads;
import ai.chalk.compute.server.exec.ReceivedMessages;
import ai.chalk.compute.server.grpc.FailuresToStatus;
import ai.chalk.compute.server.grpc.UnhealthyReason;
import ai.chalk.compute.server.http.LinkSigner;
import ai.chalk.compute.server.http.Transfers;
import ai.chalk.compute.server.image.BuildCache;
import ai.chalk.compute.server.image.CustomImageServiceV1;
import ai.chalk.compute.server.info.ServerInfoServiceV1;
import ai.chalk.compute.server.python.SandboxRuntimeServiceV1;
import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.host.DiskReserve;
import ai.chalk.compute.server.sandbox.SandboxIdentities;
import ai.chalk.compute.server.sandbox.SandboxManager;
import ai.chalk.compute.server.sandbox.SandboxServiceV1;
import ai.chalk.compute.server.sandbox.SandboxServiceV2;
import ai.chalk.compute.server.secret.EnvironmentSecretsServiceV1;
import ai.chalk.compute.server.secret.IntegrationAdminServiceV1;
import ai.chalk.compute.server.secret.IntegrationsServiceV1;
import ai.chalk.compute.server.secret.LocalSecretSweep;
import ai.chalk.compute.server.secret.SecretCipher;
import ai.chalk.compute.server.secret.SecretReferences;
import ai.chalk.compute.server.secret.Secrets;
import ai.chalk.compute.server.session.SandboxProcessServiceV2;
import ai.chalk.compute.server.session.SessionLog;
import ai.chalk.compute.server.snapshot.SandboxSnapshotServiceV2;
import ai.chalk.compute.server.snapshot.SnapshotManager;
import ai.chalk.compute.server.sql.SqlEngine;
import ai.chalk.compute.server.sql.SqlOptions;
import ai.chalk.compute.server.sql.SqlQueries;
import ai.chalk.compute.server.sql.SqlServiceV1;
import ai.chalk.compute.server.sql.StoredDatasetTables;
import ai.chalk.compute.server.sql.TransferLinks;
import ai.chalk.compute.server.store.Database;
import ai.chalk.compute.server.store.DatasetStore;
import ai.chalk.compute.server.store.EvaluationRunStore;
import ai.chalk.compute.server.store.EvaluationStore;
import ai.chalk.compute.server.store.FunctionStore;
import ai.chalk.compute.server.store.ImageBuildStore;
import ai.chalk.compute.server.store.SandboxState;
import ai.chalk.compute.server.store.SandboxStore;
import ai.chalk.compute.server.store.ScalingGroupStore;
import ai.chalk.compute.server.store.SecretStore;
import ai.chalk.compute.server.store.SnapshotStore;
import ai.chalk.compute.server.store.SqlJobStore;
import ai.chalk.compute.server.store.VolumeStore;
import ai.chalk.compute.server.team.TeamServiceV1;
import ai.chalk.compute.server.threads.DaemonThreads;
import ai.chalk.compute.server.volume.VolumeManager;
import ai.chalk.compute.server.volume.VolumeServiceV1;
import io.grpc.BindableService;
import io.grpc.Codec;
import io.grpc.DecompressorRegistry;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Chalk Compute server: Chalk's sandbox gRPC services on a runtime, with state in an
 * embedded database under the data directory. It always serves in-process (for a client in the
 * same JVM) and, when a port is given, over TCP.
 *
 * <pre>{@code
 * try (ComputeServer server = ComputeServer.builder().dataDir(dir).port(0).build().start()) {
 *     int port = server.port().orElseThrow();
 * }
 * }</pre>
 */
public final class ComputeServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ComputeServer.class);
    private static final FailuresToStatus FAILURES_TO_STATUS = new FailuresToStatus();
    /**
     * The largest message a client may send, on every service: 33 MiB, a volume file sent whole ({@code PutFile},
     * at most {@link VolumeManager#MAX_FILE_BYTES}) with a MiB for its envelope. A larger message is refused by
     * the transport with RESOURCE_EXHAUSTED "gRPC message exceeds maximum size 34603008: N" before any of it
     * reaches a service; anything bigger is streamed (stdin in pieces, large files through a sandbox).
     */
    public static final int MAX_MESSAGE_BYTES = VolumeManager.MAX_FILE_BYTES + (1 << 20);

    /**
     * What compressed messages the transports take: none. The budget of messages being received counts bytes as they
     * come, and a gzip message of 33 KiB is 33 MiB once read, so that compression let any caller past it (a client
     * that asks for compression is answered UNIMPLEMENTED; none of Chalk's SDKs compresses requests).
     */
    public static final DecompressorRegistry NO_DECOMPRESSION =
            DecompressorRegistry.emptyInstance().with(Codec.Identity.NONE, false);
    /** How often a failing store is tried again, so health turns SERVING soon after it recovers. */
    static final long STORE_PROBE_SECONDS = 2;
    /** How often unused blobs are looked for, and how long after the start the first time. */
    static final Duration BLOB_COLLECTION_INTERVAL = Duration.ofHours(1);

    static final Duration BLOB_COLLECTION_FIRST = Duration.ofMinutes(10);

    private final Builder config;
    private Database database;
    private VolumeManager volumes;
    private SandboxRuntime runtime;
    private SandboxManager sandboxes;
    private BuildCache images;
    private SnapshotManager snapshots;
    private ScheduledExecutorService scheduler;
    private ProcessThreads processThreads;
    private Transports transports;
    private final ai.chalk.compute.server.grpc.CallsInFlight callsInFlight;
    private final ai.chalk.compute.server.grpc.OpenConnections openConnections;
    private Authentication authentication;
    private HealthStatusManager health;
    private Transfers transfers;
    private SqlQueries sqlQueries;
    private DatasetManager datasets;
    private FunctionServices functions;
    private BlobCollection blobCollection;
    private EvaluationServiceV1 evaluations;
    private LocalSecretSweep localSecrets;
    private final MemoryBudgets budgets;
    private volatile boolean running;

    private ComputeServer(Builder config) {
        this.config = config;
        this.callsInFlight = new ai.chalk.compute.server.grpc.CallsInFlight(config.maxCallsInFlight);
        this.openConnections = new ai.chalk.compute.server.grpc.OpenConnections(
                config.maxConnections, config.maxConnectionsPerAddress);
        MemoryBudgets ofHeap = MemoryBudgets.ofHeap(Runtime.getRuntime().maxMemory());
        this.budgets = MemoryBudgets.withReceivedMessages(
                config.sessionOutputBudget >= 0
                        ? new ByteBudget(ofHeap.sessionOutput().budget().what(), config.sessionOutputBudget)
                        : ofHeap.sessionOutput().budget(),
                config.stdinBudget >= 0
                        ? new ByteBudget(ofHeap.stdin().budget().what(), config.stdinBudget)
                        : ofHeap.stdin().budget(),
                config.collectedOutputBudget >= 0
                        ? new ByteBudget(ofHeap.collectedOutput().budget().what(), config.collectedOutputBudget)
                        : ofHeap.collectedOutput().budget(),
                config.evaluationRunsBudget >= 0
                        ? new ByteBudget(ofHeap.evaluationRuns().what(), config.evaluationRunsBudget)
                        : ofHeap.evaluationRuns(),
                ofHeap.volumeFileReads(),
                config.functionCallsBudget >= 0
                        ? MemoryBudgets.functionCalls(config.functionCallsBudget)
                        : ofHeap.functionCalls(),
                config.unsentAnswersBudget >= 0
                        ? MemoryBudgets.unsentAnswers(config.unsentAnswersBudget)
                        : ofHeap.unsentAnswers(),
                config.receivedMessagesBudget >= 0
                        ? config.receivedMessagesBudget
                        : ofHeap.receivedMessages().limit());
    }

    /** A builder with the defaults: local runtime, isolation auto, in-process only. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Opens the store, starts the runtime, recovers state from a previous run, and starts serving.
     *
     * @throws IOException           when the TCP port cannot be bound or the data directory is unusable
     * @throws IllegalStateException when the runtime cannot run here (e.g. isolation required but unavailable)
     */
    public synchronized ComputeServer start() throws IOException {
        if (running) {
            return this;
        }
        Path dataDir = config.dataDir.toAbsolutePath().normalize();
        refuseSystemLocation(dataDir);
        Files.createDirectories(dataDir);
        // what sandboxes leave on disk (their layers, volumes) may hold setuid files and secrets: keep other users out
        for (String area : List.of(
                "state", "runtime", "volumes", "volume-images", "blobs", "functions", "datasets-work", "sql-work")) {
            privateDirectory(dataDir.resolve(area));
        }
        transports = new Transports(
                config.inProcessName,
                config.host,
                config.port,
                config.httpPort,
                config.tlsCertChain,
                config.tlsPrivateKey,
                config.auth,
                openConnections);
        // before anything starts: a key others can read is refused with what to do, and nothing is left running
        SecretCipher cipher = config.secretsKeyFile != null
                ? SecretCipher.load(config.secretsKeyFile, false)
                : SecretCipher.load(dataDir.resolve(SecretCipher.KEY_FILE_NAME), true);
        try {
            database = Database.open(dataDir);
            SecretStore secretStore = new SecretStore(database);
            Secrets secrets = new Secrets(secretStore, cipher);
            runtime = RuntimeStart.start(config.runtime, config.egress, dataDir);
            scheduler = DaemonThreads.timer("chalk-compute-timers");
            authentication = Authentication.open(config.auth, dataDir, Clock.systemUTC(), scheduler);
            processThreads = ProcessThreads.create(scheduler, config.maxRunningCommands);
            long diskReserve = config.diskReserve >= 0 ? config.diskReserve : DiskReserve.of(dataDir);
            volumes = new VolumeManager(
                    new VolumeStore(database),
                    dataDir.resolve("volumes"),
                    dataDir.resolve("volume-images"),
                    config.volumeBytes,
                    diskReserve);
            images = new BuildCache(runtime::imageBuilder, new ImageBuildStore(database), config.parallelImageBuilds);
            images.recover();
            SandboxStore sandboxStore = new SandboxStore(database);
            SnapshotStore snapshotStore = new SnapshotStore(database);
            FunctionStore functionStore = new FunctionStore(database);
            ScalingGroupStore groupStore = new ScalingGroupStore(database);
            localSecrets = new LocalSecretSweep(
                    secretStore,
                    secrets,
                    new SecretReferences(sandboxStore, snapshotStore, functionStore, groupStore),
                    scheduler,
                    config.localSecretGrace);
            // the replicas' socket serves once the functions start, below; sandboxes made before get no way to it
            SandboxIdentities identities = new SandboxIdentities(
                    authentication.workloads(),
                    () -> functions == null ? Optional.empty() : functions.serverSocketDir());
            sandboxes = new SandboxManager(
                    runtime,
                    sandboxStore,
                    volumes,
                    images,
                    secrets,
                    localSecrets,
                    identities,
                    scheduler,
                    config.sandboxLifetime);
            sandboxes.recover();
            snapshots = new SnapshotManager(
                    snapshotStore, sandboxes, dataDir.resolve("snapshots"), localSecrets, diskReserve);
            snapshots.recover();
            // what replicas send the server: their calls on its socket and their answers to its calls
            ReceivedMessages fromReplicas = new ReceivedMessages(budgets.receivedFromReplicas());
            functions = FunctionServices.start(
                    dataDir,
                    database,
                    functionStore,
                    groupStore,
                    runtime,
                    sandboxes,
                    scheduler,
                    config.workerReadyTimeout,
                    RuntimeStart.workerJava(runtime, config.runtime),
                    authentication.workloads(),
                    secrets,
                    localSecrets,
                    diskReserve,
                    config.blobStoragePerEnvironment,
                    budgets.functionCalls(),
                    fromReplicas);
            localSecrets.start(config.localSecretSweepInterval);
            transfers = new Transfers(
                    functions.blobs(),
                    LinkSigner.load(dataDir.resolve("state"), Clock.systemUTC()),
                    Clock.systemUTC(),
                    transports::httpUrl,
                    config.transferLinkTtl);
            DatasetStore datasetStore = new DatasetStore(database);
            datasets = new DatasetManager(
                    datasetStore, functions.blobs(), transfers, dataDir.resolve("datasets-work"), Clock.systemUTC());
            SqlJobStore sqlJobs = new SqlJobStore(database);
            sqlQueries = new SqlQueries(
                    new SqlEngine(
                            new StoredDatasetTables(datasetStore, functions.blobs()),
                            config.sql,
                            dataDir.resolve("sql-work")),
                    sqlJobs,
                    functions.blobs());
            blobCollection = new BlobCollection(
                    functions.blobs(),
                    functions.blobOwners(),
                    // finalizations after open uploads: one is listed before its session stops being open
                    List.of(
                            functions.codeBlobs(),
                            datasetStore::eachBlob,
                            sqlJobs::eachBlob,
                            datasets::eachFinalizingBlob));
            long collectEvery = BLOB_COLLECTION_INTERVAL.toSeconds();
            AtomicBoolean collecting = new AtomicBoolean();
            scheduler.scheduleWithFixedDelay(
                    () -> {
                        // one at a time: a run that outlasts the interval is not joined by a queue of others
                        if (collecting.compareAndSet(false, true)) {
                            try {
                                functions.executor().execute(() -> {
                                    try {
                                        collectUnusedBlobs();
                                    } finally {
                                        collecting.set(false);
                                    }
                                });
                            } catch (RuntimeException e) { // stopping
                                collecting.set(false);
                            }
                        }
                    },
                    Math.min(collectEvery, BLOB_COLLECTION_FIRST.toSeconds()),
                    collectEvery,
                    TimeUnit.SECONDS);
            EvaluationRunStore evaluationRuns = new EvaluationRunStore(database);
            int interrupted = evaluationRuns.recover(Instant.now());
            if (interrupted > 0) {
                log.warn(
                        "Failed {} evaluation run(s) a restart interrupted: {}",
                        interrupted,
                        EvaluationRunStore.INTERRUPTED);
            }
            health = new HealthStatusManager();
            SandboxManager sandboxManager = sandboxes;
            database.onProblemChange(problem -> {
                health.setStatus(
                        HealthStatusManager.SERVICE_NAME_ALL_SERVICES,
                        problem.isPresent() ? ServingStatus.NOT_SERVING : ServingStatus.SERVING);
                if (problem.isEmpty()) {
                    scheduler.execute(sandboxManager::recordPendingEnds);
                }
            });
            Database store = database;
            scheduler.scheduleWithFixedDelay(
                    () -> {
                        try {
                            store.probe();
                        } catch (RuntimeException e) {
                            log.warn("Probing the failing store failed: {}", e.toString());
                        }
                    },
                    STORE_PROBE_SECONDS,
                    STORE_PROBE_SECONDS,
                    TimeUnit.SECONDS);
            List<ServerServiceDefinition> services = Stream.of(
                            intercepted(new SandboxServiceV1(sandboxes, processThreads, budgets.stdin())),
                            intercepted(new SandboxServiceV2(sandboxes, snapshots)),
                            intercepted(new SandboxRuntimeServiceV1(
                                    sandboxes,
                                    processThreads,
                                    SandboxRuntimeServiceV1.artifactBudget(
                                            Runtime.getRuntime().maxMemory()))),
                            intercepted(new SandboxSnapshotServiceV2(snapshots)),
                            intercepted(new SandboxProcessServiceV2(
                                    sandboxes, processThreads, config.sessionBufferBytes, budgets)),
                            intercepted(new VolumeServiceV1(volumes, sandboxes, budgets.volumeFileReads())),
                            intercepted(new BlobServiceV1(functions.blobs(), functions.blobOwners())),
                            intercepted(functions.catalog()),
                            intercepted(functions.asyncCalls()),
                            intercepted(functions.scalingGroups()),
                            intercepted(functions.logs()),
                            intercepted(new CustomImageServiceV1(images, sandboxStore)),
                            intercepted(new DatasetMetadataServiceV1(datasets)),
                            intercepted(
                                    evaluations = EvaluationServiceV1.create(
                                            new EvaluationStore(database),
                                            evaluationRuns,
                                            datasets,
                                            functionStore,
                                            functions.calls(),
                                            (environment, name) -> secretValue(secrets, environment, name),
                                            dataDir.resolve("evaluations-work"),
                                            functions.executor(),
                                            budgets.evaluationRuns())),
                            intercepted(evaluations.waits()),
                            intercepted(
                                    new SqlServiceV1(sqlQueries, new TransferLinks(transfers, config.transferLinkTtl))),
                            ServerInterceptors.intercept(
                                    ServerInterceptors.intercept(authentication.service(), FAILURES_TO_STATUS),
                                    config.interceptors),
                            intercepted(new EnvironmentSecretsServiceV1(secrets)),
                            intercepted(new IntegrationsServiceV1(secrets)),
                            intercepted(new IntegrationAdminServiceV1(secrets)),
                            intercepted(new TeamServiceV1(this::grpcUrl)),
                            intercepted(new ServerInfoServiceV1(
                                    runtime.name(), runtime::isolation, sandboxes::counts, runtime::pooledSandboxes)),
                            intercepted(new AiRouterServiceV1(config.aiRouter)),
                            ServerInterceptors.intercept(
                                    health.getHealthService(), new UnhealthyReason(database::problem)),
                            ProtoReflectionServiceV1.newInstance().bindService())
                    .toList();
            transports.start(
                    services,
                    authentication,
                    functions,
                    transfers,
                    new ReceivedMessages(budgets.receivedMessages()),
                    fromReplicas,
                    callsInFlight,
                    new ai.chalk.compute.server.grpc.UnsentAnswers(budgets.unsentAnswers()));
        } catch (IOException | RuntimeException e) {
            closeQuietly();
            throw e;
        }
        running = true;
        Isolation iso = runtime.isolation();
        log.info(
                "Chalk Compute server started: {}; runtime {}, isolation {} ({}); data in {}",
                transports.describe(),
                runtime.name(),
                iso.level(),
                iso.detail(),
                dataDir);
        return this;
    }

    /** Sandboxes see /usr, /etc and the like read-only, so a data directory there would be visible to them. */
    private static void refuseSystemLocation(Path dataDir) {
        for (String system : List.of("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")) {
            if (dataDir.startsWith(system)) {
                throw new IllegalArgumentException(
                        "data directory " + dataDir + " is inside " + system
                                + ", which every sandbox sees read-only: choose a directory elsewhere, e.g. /var/lib/chalk-compute");
            }
        }
    }

    private static void privateDirectory(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /** The environment's secret {@code name}, or null when it has none (a scorer's option names a missing one). */
    private static @Nullable String secretValue(Secrets secrets, String environment, String name) {
        try {
            return secrets.value(environment, name);
        } catch (ComputeException e) {
            return null;
        }
    }

    private ServerServiceDefinition intercepted(BindableService service) {
        // failures become statuses right around the service, inside every interceptor a user added
        return ServerInterceptors.intercept(
                ServerInterceptors.intercept(service, FAILURES_TO_STATUS), config.interceptors);
    }

    /** The name clients use with the in-process transport. */
    public String inProcessName() {
        return config.inProcessName;
    }

    /** The TCP port the server listens on, if it was asked to. */
    public OptionalInt port() {
        return transports == null ? OptionalInt.empty() : transports.port();
    }

    /** The URL TCP clients use ({@code http://127.0.0.1:50051}, {@code https://...} with TLS), if it listens. */
    public Optional<String> grpcUrl() {
        return transports == null ? Optional.empty() : transports.grpcUrl();
    }

    /** The server's HTTP URL (JWKS at {@code /.well-known/jwks.json}). */
    public String httpUrl() {
        return transports.httpUrl();
    }

    /**
     * The signed links of the server's HTTP port: services hand out download links to blobs and upload links to their
     * targets through it.
     */
    public Transfers transfers() {
        return transfers;
    }

    /** The datasets of every environment: what readers inside the server (SQL) read. */
    public DatasetManager datasets() {
        return datasets;
    }

    /** The server's authentication: its credentials and tokens. */
    public Authentication authentication() {
        return authentication;
    }

    /** The runtime's name ({@code local}, ...). */
    public String runtimeName() {
        return runtime.name();
    }

    /** The isolation actually in force for sandboxes. */
    public Isolation isolation() {
        return runtime.isolation();
    }

    /** How many sandboxes are in each state. */
    public Map<SandboxState, Long> sandboxCounts() {
        return sandboxes.counts();
    }

    /** Sandboxes the runtime started ahead of time and keeps idle for creates; never listed, no one's yet. */
    public int pooledSandboxes() {
        return runtime.pooledSandboxes();
    }

    /** The calls under way on the TCP port and the replicas' socket, counted against {@link Builder#maxCallsInFlight}. */
    public ai.chalk.compute.server.grpc.CallsInFlight callsInFlight() {
        return callsInFlight;
    }

    /** The connections open on the TCP port, counted against {@link Builder#maxConnections}. */
    public ai.chalk.compute.server.grpc.OpenConnections openConnections() {
        return openConnections;
    }

    /** The commands clients run now, counted against {@link Builder#maxRunningCommands}. */
    public ai.chalk.compute.server.exec.RunningCommands runningCommands() {
        return processThreads.commands();
    }

    /** What clients make the server hold in memory now, against the server-wide limits. */
    public MemoryBudgets memoryBudgets() {
        return budgets;
    }

    /**
     * Collects the blobs that nothing refers to and that their environments have not stored or asked about for
     * {@link Builder#unusedBlobsKeptFor}; run every hour.
     */
    private void collectUnusedBlobs() {
        try {
            BlobCollection.Collected c = collectBlobs(Instant.now().minus(config.unusedBlobsKeptFor));
            if (c.released() > 0) {
                log.info(
                        "Collected unused blobs: {} no longer count against their environments' storage ({} bytes),"
                                + " {} files deleted ({} bytes)",
                        c.released(),
                        c.releasedBytes(),
                        c.deleted(),
                        c.deletedBytes());
            }
        } catch (IOException | RuntimeException e) {
            log.warn("Collecting unused blobs failed (tried again in an hour): {}", e.toString());
        }
    }

    /**
     * Collects now the blobs that nothing refers to and that their environments have not stored or asked about since
     * {@code cutoff} ({@link BlobCollection#collect}); the server does so every hour by itself.
     */
    public BlobCollection.Collected collectBlobs(Instant cutoff) throws IOException {
        return blobCollection.collect(cutoff);
    }

    /** Whether the server is serving. */
    public boolean isRunning() {
        return running;
    }

    /**
     * Stops serving, terminates running sandboxes (their records say the server shut down), and
     * closes the store. Safe to call more than once.
     */
    @Override
    public synchronized void close() {
        if (!running) {
            return;
        }
        running = false;
        closeQuietly();
        log.info("Chalk Compute server stopped");
    }

    private void closeQuietly() {
        if (health != null) {
            health.enterTerminalState();
        }
        if (transports != null) {
            transports.shutdown();
        }
        if (localSecrets != null) {
            localSecrets.close(); // the workloads ending below leave their secrets for the next start's sweep
        }
        // each step runs whatever the one before did: a store that cannot write must not leave sandboxes running
        if (sqlQueries != null) {
            step("canceling SQL queries", sqlQueries::close); // recorded as failed while the store is open
        }
        if (evaluations != null) {
            evaluations.stop(); // before the replicas they call go
        }
        if (functions != null) {
            step("stopping function replicas", functions::close); // replicas stop before the sandboxes they run beside
        }
        if (sandboxes != null) {
            step("terminating sandboxes", sandboxes::close);
        }
        if (snapshots != null) {
            step("stopping snapshots", snapshots::close);
        }
        if (images != null) {
            step("stopping image builds", images::close); // running builds are recorded failed while the store is open
        }
        if (transports != null) {
            transports.close(); // the calls under way end once what served them has stopped
        }
        if (runtime != null) {
            step("closing the runtime", runtime::close);
        }
        if (volumes != null) {
            step("unmounting volumes", volumes::close); // after the sandboxes that had them
        }
        if (processThreads != null) {
            processThreads.close();
        }
        if (scheduler != null) {
            scheduler.shutdownNow();
        }
        if (database != null) {
            step("closing the store", database::close);
        }
    }

    private static void step(String what, Runnable step) {
        try {
            step.run();
        } catch (RuntimeException e) {
            log.warn("Shutting down: {} failed: {}", what, e.toString());
        }
    }

    /** Settings of a {@link ComputeServer}. */
    public static final class Builder {
        private Path dataDir = Path.of(System.getProperty("user.home"), ".chalk-compute");
        private String host = "127.0.0.1";
        private Authentication.Mode auth = Authentication.Mode.TOKENS;
        private Integer httpPort;
        private Integer port;
        private String inProcessName = "chalk-compute-" + UUID.randomUUID();
        private RuntimeOptions runtime = LocalRuntimeOptions.DEFAULTS;
        private EgressOptions egress = EgressOptions.DEFAULTS;
        private Duration sandboxLifetime = Duration.ofHours(1);
        private long volumeBytes = VolumeManager.DEFAULT_VOLUME_BYTES;
        private long diskReserve = -1;
        private long blobStoragePerEnvironment = -1;
        private Duration unusedBlobsKeptFor = Duration.ofHours(24);
        private long sessionBufferBytes = SessionLog.DEFAULT_CAPACITY_BYTES;
        private long sessionOutputBudget = -1;
        private long stdinBudget = -1;
        private long collectedOutputBudget = -1;
        private long receivedMessagesBudget = -1;
        private long evaluationRunsBudget = -1;
        private long functionCallsBudget = -1;
        private long unsentAnswersBudget = -1;
        private int parallelImageBuilds = 2;
        private int maxRunningCommands = ai.chalk.compute.server.exec.RunningCommands.DEFAULT_LIMIT;
        private int maxCallsInFlight = ai.chalk.compute.server.grpc.CallsInFlight.DEFAULT_LIMIT;
        private int maxConnections = ai.chalk.compute.server.grpc.OpenConnections.DEFAULT_LIMIT;
        private int maxConnectionsPerAddress = ai.chalk.compute.server.grpc.OpenConnections.DEFAULT_PER_ADDRESS;
        private Duration workerReadyTimeout = Duration.ofSeconds(60);
        private Path tlsCertChain;
        private Path tlsPrivateKey;
        private Path secretsKeyFile;
        private Duration transferLinkTtl = Transfers.DEFAULT_TTL;
        private Duration localSecretGrace = LocalSecretSweep.DEFAULT_GRACE;
        private Duration localSecretSweepInterval = LocalSecretSweep.DEFAULT_INTERVAL;
        private SqlOptions sql = SqlOptions.defaults();
        private AiRouterOptions aiRouter;
        private final List<ServerInterceptor> interceptors = new ArrayList<>();

        private Builder() {}

        /**
         * Limits of SQL queries: memory per query (default 1 GiB, at most 8 GiB on request), threads, the largest
         * result returned inline (16 MiB; larger ones need {@code persist}), the size of persisted shards, and how
         * many background queries run at once.
         */
        public Builder sql(SqlOptions sql) {
            this.sql = Objects.requireNonNull(sql, "sql");
            return this;
        }

        /**
         * Where state lives: the database, sandboxes' writable layers, volumes, snapshots. Default
         * {@code ~/.chalk-compute}.
         */
        public Builder dataDir(Path dataDir) {
            this.dataDir = Objects.requireNonNull(dataDir, "dataDir");
            return this;
        }

        /** Also serve over TCP on this port (0 picks a free one). Unset: in-process only. */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port " + port + " is out of range 0-65535");
            }
            this.port = port;
            return this;
        }

        /**
         * The address to bind the TCP port to. Default {@code 127.0.0.1}: reachable from this machine only. Any other
         * address needs authentication on (the default); serve it with {@link #tls} so tokens are not sent in the
         * clear.
         */
        public Builder host(String host) {
            this.host = Objects.requireNonNull(host, "host");
            return this;
        }

        /**
         * Whether TCP callers must show a token ({@link Authentication.Mode#TOKENS}, the default) or are all trusted
         * ({@link Authentication.Mode#NONE}: loopback only, logged as a warning). The in-process transport never asks.
         */
        public Builder auth(Authentication.Mode auth) {
            this.auth = Objects.requireNonNull(auth, "auth");
            return this;
        }

        /**
         * The HTTP port (the JWKS that verifies the server's tokens). Default: the TCP port plus one, or a free port
         * when the TCP port is picked (0) or the server is in-process only (then on loopback).
         */
        public Builder httpPort(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("HTTP port " + port + " is out of range 0-65535");
            }
            this.httpPort = port;
            return this;
        }

        /**
         * How long the signed links of the HTTP port live (dataset uploads and downloads, query results): whoever holds
         * one may use it until then. Clients of this SDK ask for a fresh link when one expires. Default one hour.
         */
        public Builder transferLinkTtl(Duration ttl) {
            if (ttl.isNegative() || ttl.isZero()) {
                throw new IllegalArgumentException("transfer link lifetime must be positive, got " + ttl);
            }
            this.transferLinkTtl = ttl;
            return this;
        }

        /**
         * How long a blob that nothing refers to is kept after its environment last stored it or asked about it:
         * function code of deleted versions, files of deleted datasets, results of forgotten queries, and uploads never
         * used. Then it stops counting against the environment's blob storage, and its file is deleted once no
         * environment holds it. Asking whether a blob is present (as a client does before it skips an upload) keeps it
         * for this long again. At least one hour; default 24 hours.
         */
        public Builder unusedBlobsKeptFor(Duration kept) {
            if (kept.compareTo(BLOB_COLLECTION_INTERVAL) < 0) {
                // what is stored or asked about must stay until the record that refers to it is written
                throw new IllegalArgumentException("unused blobs are kept at least " + BLOB_COLLECTION_INTERVAL
                        + " (one collection interval), got " + kept);
            }
            this.unusedBlobsKeptFor = kept;
            return this;
        }

        /** The in-process transport name clients connect to. Default: a random unique name. */
        public Builder inProcessName(String name) {
            this.inProcessName = Objects.requireNonNull(name, "name");
            return this;
        }

        /**
         * The sandbox runtime and its settings: {@link LocalRuntimeOptions} (default {@link
         * LocalRuntimeOptions#DEFAULTS}), {@link DockerRuntimeOptions}, or {@link RuntimeOptions#auto}.
         */
        public Builder runtime(RuntimeOptions runtime) {
            this.runtime = Objects.requireNonNull(runtime, "runtime");
            return this;
        }

        /**
         * How the egress proxy of sandboxes with a network policy resolves names (a fixed table before the system
         * resolver) and which CAs it trusts besides the JDK's for the hosts it intercepts. Default: the system
         * resolver and the JDK's CAs.
         */
        public Builder egress(EgressOptions egress) {
            this.egress = Objects.requireNonNull(egress, "egress");
            return this;
        }

        /**
         * The size of each volume's file system (sparse: a volume takes only what is written); writing past it fails
         * with {@code ENOSPC}. Default 16 GiB.
         */
        public Builder volumeSize(long bytes) {
            if (bytes < (64L << 20)) {
                throw new IllegalArgumentException("a volume needs at least 64 MiB, got " + bytes + " bytes");
            }
            this.volumeBytes = bytes;
            return this;
        }

        /**
         * How much of its disk the server keeps free of what tenants make it write (uploads, code unpacked for deploys,
         * snapshots): what would leave less is refused, saying so. Default 1 GiB or a fiftieth of the disk, whichever
         * is more.
         */
        public Builder diskReserve(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("a disk reserve is a number of bytes, at least 0, got " + bytes);
            }
            this.diskReserve = bytes;
            return this;
        }

        /**
         * The most bytes of blobs one environment may store (its datasets, function code, SQL results and files; what
         * nothing refers to any more stops counting after {@link #unusedBlobsKeptFor}): past that its uploads are
         * refused, saying so.
         * Default half of what the disk holds above its reserve, so that no one tenant can fill the disk and have
         * every other tenant's uploads refused.
         */
        public Builder blobStoragePerEnvironment(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException(
                        "blob storage per environment is a number of bytes, at least 0, got " + bytes);
            }
            this.blobStoragePerEnvironment = bytes;
            return this;
        }

        /** The longest a sandbox runs before the server terminates it. Default one hour. */
        public Builder sandboxLifetime(Duration lifetime) {
            if (lifetime.isNegative() || lifetime.isZero()) {
                throw new IllegalArgumentException("sandbox lifetime must be positive, got " + lifetime);
            }
            this.sandboxLifetime = lifetime;
            return this;
        }

        /** Output kept per session for clients that re-attach. Default 8 MiB. */
        public Builder sessionBufferBytes(long bytes) {
            if (bytes < 1024) {
                throw new IllegalArgumentException("session buffer must be at least 1024 bytes, got " + bytes);
            }
            this.sessionBufferBytes = bytes;
            return this;
        }

        /**
         * The most bytes of output all sessions together may buffer; each session reserves its whole buffer
         * ({@link #sessionBufferBytes}) while it runs, and sessions past the budget are refused with
         * RESOURCE_EXHAUSTED. Default a quarter of the heap.
         */
        public Builder sessionOutputBudget(long bytes) {
            this.sessionOutputBudget = nonNegative("session output budget", bytes);
            return this;
        }

        /**
         * The most bytes of stdin the server holds, across all calls, that processes have not read yet; stdin
         * past it is refused with RESOURCE_EXHAUSTED. Default a sixteenth of the heap.
         */
        public Builder stdinBudget(long bytes) {
            this.stdinBudget = nonNegative("stdin budget", bytes);
            return this;
        }

        /**
         * The most bytes of output that {@code ExecCommand} calls running at once may collect together; a call
         * whose output does not fit fails with RESOURCE_EXHAUSTED. Default an eighth of the heap.
         */
        public Builder collectedOutputBudget(long bytes) {
            this.collectedOutputBudget = nonNegative("collected output budget", bytes);
            return this;
        }

        /**
         * The most bytes of request messages the TCP port may be receiving at once, across all calls, and as many on
         * the replicas' socket (gRPC holds a message whole, up to {@link #MAX_MESSAGE_BYTES}, before a service sees
         * it); one caller may hold half of it, and a call whose message does not fit fails with RESOURCE_EXHAUSTED.
         * Default an eighth of the heap each, and room for at least two of the largest messages.
         */
        public Builder receivedMessagesBudget(long bytes) {
            this.receivedMessagesBudget = nonNegative("received messages budget", bytes);
            return this;
        }

        /**
         * The most bytes the evaluation runs under way may hold together in the heap until their result files are
         * written (their input rows and results, estimated); a run that would hold more fails with a message saying
         * so. Default an eighth of the heap.
         */
        public Builder evaluationRunsBudget(long bytes) {
            this.evaluationRunsBudget = nonNegative("evaluation runs budget", bytes);
            return this;
        }

        /**
         * The most bytes the arguments of function calls under way or queued may hold together in the heap, one
         * environment at most half; a call past its environment's share is refused ({@code RESOURCE_EXHAUSTED}), so a
         * budget below twice the largest message (33 MiB) refuses the largest calls whatever else runs. Default an
         * eighth of the heap, at least twice the largest message.
         */
        public Builder functionCallsBudget(long bytes) {
            this.functionCallsBudget = nonNegative("function calls budget", bytes);
            return this;
        }

        /**
         * The bytes of answers the server has sent to clients that have not read them yet, held until each call is
         * over: one environment holds at most half, and an answer past either limit is not sent (its call ends
         * RESOURCE_EXHAUSTED). A budget below twice the largest message (33 MiB) refuses the largest answers whatever
         * else runs. Default an eighth of the heap, at least twice the largest message.
         */
        public Builder unsentAnswersBudget(long bytes) {
            this.unsentAnswersBudget = nonNegative("unsent answers budget", bytes);
            return this;
        }

        private static long nonNegative(String what, long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException(what + " must not be negative, got " + bytes);
            }
            return bytes;
        }

        /**
         * How many commands clients may run at once (execs, one-shot commands, sessions, Python snippets), server-wide;
         * one environment runs at most half of them, and a command past either limit is refused with RESOURCE_EXHAUSTED. Each running
         * command holds three or four server threads. Default {@value
         * ai.chalk.compute.server.exec.RunningCommands#DEFAULT_LIMIT}.
         */
        public Builder maxRunningCommands(int commands) {
            if (commands < 2) {
                throw new IllegalArgumentException("max running commands must be at least 2, got " + commands);
            }
            this.maxRunningCommands = commands;
            return this;
        }

        /**
         * How many unary and server-streaming calls the TCP port and the replicas' socket take at once (each may hold a
         * server thread while it waits: a function call for a replica with room, a create for its image, a SQL
         * query); one environment has at most half of them under way, and a call past either limit is answered
         * RESOURCE_EXHAUSTED. The in-process transport, the application's own, is not counted. Default {@value
         * ai.chalk.compute.server.grpc.CallsInFlight#DEFAULT_LIMIT}.
         */
        public Builder maxCallsInFlight(int calls) {
            if (calls < 2) {
                throw new IllegalArgumentException("max calls in flight must be at least 2, got " + calls);
            }
            this.maxCallsInFlight = calls;
            return this;
        }

        /**
         * How many TCP connections the server keeps open at once, and from one address (an IPv6 one by its /64): each
         * holds a file descriptor before any call is made. A connection past either is closed as soon as it is
         * accepted (a gRPC client sees UNAVAILABLE and tries again). Default {@value
         * ai.chalk.compute.server.grpc.OpenConnections#DEFAULT_LIMIT} and {@value
         * ai.chalk.compute.server.grpc.OpenConnections#DEFAULT_PER_ADDRESS}.
         */
        public Builder maxConnections(int connections, int perAddress) {
            if (perAddress < 1 || perAddress > connections) {
                throw new IllegalArgumentException("max connections per address must be between 1 and the limit "
                        + connections + ", got " + perAddress);
            }
            this.maxConnections = connections;
            this.maxConnectionsPerAddress = perAddress;
            return this;
        }

        /** How many image builds run at once; more wait their turn. Default 2. */
        public Builder parallelImageBuilds(int builds) {
            if (builds < 1 || builds > 64) {
                throw new IllegalArgumentException("parallel image builds must be 1 to 64, got " + builds);
            }
            this.parallelImageBuilds = builds;
            return this;
        }

        /** How long a function worker may take to start serving before its replica counts as failed. Default 60 s. */
        public Builder workerReadyTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("worker ready timeout must be positive, got " + timeout);
            }
            this.workerReadyTimeout = timeout;
            return this;
        }

        /** Serve the TCP port with TLS, from PEM files: the certificate chain and its private key. */
        public Builder tls(Path certChain, Path privateKey) {
            this.tlsCertChain = Objects.requireNonNull(certChain, "certChain");
            this.tlsPrivateKey = Objects.requireNonNull(privateKey, "privateKey");
            return this;
        }

        /**
         * The key that encrypts secrets and integration values at rest (AES-256-GCM): a file of 32 random bytes in
         * base64 ({@code openssl rand -base64 32}) that only its owner may read (mode 0600; one others can read is
         * refused at start). Default: {@code <data-dir>/secrets.key}, made on first start. Keep it out of the data
         * directory's backups to keep backups of the database useless without it.
         */
        public Builder secretsKeyFile(Path keyFile) {
            this.secretsKeyFile = Objects.requireNonNull(keyFile, "keyFile");
            return this;
        }

        /**
         * How long a secret the SDK saved for a local value ({@code Secret.fromLocalEnv}, named
         * {@code CHALK_LOCAL_...}) waits for the workload that references it before it is deleted as abandoned.
         * Such a secret is deleted once nothing that exists references it: no sandbox that has not ended, snapshot,
         * function version or scaling group that is not deleted. Default 5 minutes.
         */
        public Builder localSecretGrace(Duration grace) {
            if (grace.isNegative()) {
                throw new IllegalArgumentException("local secret grace must not be negative, got " + grace);
            }
            this.localSecretGrace = grace;
            return this;
        }

        /**
         * How often the server looks for secrets saved for local values that nothing references any more, besides
         * shortly after a sandbox ends or a function, version, scaling group or snapshot is deleted. Default 1 minute.
         */
        public Builder localSecretSweepInterval(Duration interval) {
            if (interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("local secret sweep interval must be positive, got " + interval);
            }
            this.localSecretSweepInterval = interval;
            return this;
        }

        /**
         * The AI router's provider: LLM judges and embedding scorers that name no provider of their own call it
         * through the server, which adds the provider's key, so applications and workloads never hold it.
         * Default: none (the router refuses with FAILED_PRECONDITION saying how to configure one).
         */
        public Builder aiRouter(AiRouterOptions options) {
            this.aiRouter = Objects.requireNonNull(options, "options");
            return this;
        }

        /**
         * Adds interceptors around the sandbox services (authentication, tracing, auditing), on
         * both transports. Like {@link ServerInterceptors#intercept}, the last one added runs first.
         */
        public Builder interceptors(ServerInterceptor... interceptors) {
            this.interceptors.addAll(List.of(interceptors));
            return this;
        }

        /** A server with these settings; call {@link ComputeServer#start()} to run it. */
        public ComputeServer build() {
            return new ComputeServer(this);
        }
    }
}
