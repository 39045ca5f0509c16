package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import java.util.function.Supplier;

/** The replica pools of every function revision that serves, by revision id. */
public final class WorkerPools implements AutoCloseable {

    private final SandboxRuntime runtime;
    private final WorkerJava java;
    private final Path runRoot;
    private final ExecutorService executor;
    private final Optional<ServerAccess> server;
    private final Map<String, ReplicaPool> pools = new ConcurrentHashMap<>();

    /**
     * @param java     the Java replicas run, and where
     * @param runRoot  where replicas' run directories (their sockets) are made
     * @param executor runs replica starts and output readers
     * @param server   how replicas reach the server (its socket, their tokens), if the socket serves
     */
    public WorkerPools(
            SandboxRuntime runtime,
            WorkerJava java,
            Path runRoot,
            ExecutorService executor,
            Optional<ServerAccess> server) {
        this.runtime = runtime;
        this.java = java;
        this.runRoot = runRoot;
        this.executor = executor;
        this.server = server;
    }

    /** The pool of a revision, created (and filled to its minimum) on first use. */
    public ReplicaPool pool(
            String revisionId,
            Supplier<WorkerLaunch> launch,
            Supplier<ReplicaPool.Scale> scale,
            Consumer<PoolStatus> onStatus) {
        ReplicaPool[] created = new ReplicaPool[1];
        ReplicaPool pool = pools.computeIfAbsent(revisionId, id -> {
            created[0] = new ReplicaPool(
                    (wid, l) -> WorkerReplica.start(wid, runtime, java, runRoot, l, executor, server),
                    launch.get(),
                    scale.get(),
                    executor,
                    onStatus);
            return created[0];
        });
        if (created[0] != null) {
            created[0].fill();
        }
        return pool;
    }

    /** The pool of a revision if it serves. */
    public Optional<ReplicaPool> existing(String revisionId) {
        return Optional.ofNullable(pools.get(revisionId));
    }

    /** Stops a revision's replicas. */
    public void retire(String revisionId) {
        ReplicaPool p = pools.remove(revisionId);
        if (p != null) {
            p.close();
        }
    }

    /** Stops idle replicas above their pools' minimum. */
    public void reap(Instant now) {
        pools.values().forEach(p -> p.reap(now));
    }

    @Override
    public void close() {
        pools.keySet().forEach(this::retire);
    }
}
