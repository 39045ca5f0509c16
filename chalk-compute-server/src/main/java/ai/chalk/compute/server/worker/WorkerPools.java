package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.exec.ReceivedMessages;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.host.WhenServerDies;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The replica pools of every function revision that serves. Revisions whose replicas would be started alike (the
 * same {@code unit}: code, functions served, worker mode, container and scaling specs, call policy, environment)
 * share one pool, so the functions of one Spring bean, deployed as several functions that each serve them all, run
 * in one set of worker JVMs rather than one per function. A shared pool reports its status to every revision it
 * serves and stops when the last of them retires.
 */
public final class WorkerPools implements AutoCloseable {

    private final SandboxRuntime runtime;
    private final Function<String, EnvironmentShares.Place> places;
    private final WorkerJava java;
    private final Path runRoot;
    private final ExecutorService executor;
    private final Optional<ServerAccess> server;
    private final FunctionLogs logs;
    private final ReceivedMessages answers;
    private final @Nullable WhenServerDies cleanupAfterServer;
    private final Map<String, Shared> byRevision = new ConcurrentHashMap<>();
    private final Map<String, Shared> byUnit = new HashMap<>(); // guarded by this
    /**
     * Revisions of deleted versions, never served again (guarded by this; a restart reads none: they are deleted): the
     * last {@value #KEPT_DELETED}, since a tenant deploying and deleting versions in a loop added one for each, for as
     * long as the server ran; a call still holding a version deleted longer ago than that is rare, and would only
     * start its tenant's replicas again.
     */
    private final Set<String> deleted = Collections.newSetFromMap(new LinkedHashMap<String, Boolean>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > KEPT_DELETED;
        }
    });

    /** How many deleted versions' revisions are remembered. */
    static final int KEPT_DELETED = 10_000;

    /** One pool and the revisions it serves, each with where its status goes. */
    private static final class Shared {
        private final String unit;
        private final Map<String, Consumer<PoolStatus>> revisions = new ConcurrentHashMap<>();
        private ReplicaPool pool;

        Shared(String unit) {
            this.unit = unit;
        }

        void report(PoolStatus status) {
            revisions.values().forEach(sink -> sink.accept(status));
        }
    }

    /**
     * @param places   a replica's place among its environment's sandboxes, taken before it starts (a refusal is a
     *                 {@code ComputeException}) and given back when it stops
     * @param java     the Java replicas run, and where
     * @param runRoot  where replicas' run directories (their sockets) are made
     * @param executor runs replica starts and output readers
     * @param server   how replicas reach the server (its socket, their tokens), if the socket serves
     * @param logs     keeps what replicas write, for the functions' logs
     * @param answers  the budget of what replicas send the server, which their answers count against
     */
    public WorkerPools(
            SandboxRuntime runtime,
            Function<String, EnvironmentShares.Place> places,
            WorkerJava java,
            Path runRoot,
            ExecutorService executor,
            Optional<ServerAccess> server,
            FunctionLogs logs,
            ReceivedMessages answers) {
        this.logs = logs;
        this.answers = answers;
        this.runtime = runtime;
        this.places = places;
        this.java = java;
        this.runRoot = runRoot;
        this.executor = executor;
        this.server = server;
        WorkerReplica.removeLeftovers(runRoot);
        this.cleanupAfterServer = WorkerReplica.removeWhenServerDies(runRoot);
    }

    /**
     * The pool of a revision: the pool of its unit when another revision of that unit serves, else a new one
     * (filled to its minimum).
     *
     * @param unit     what makes two revisions' replicas interchangeable; revisions of equal units share a pool
     * @param launch   how to start replicas, asked only when a new pool is made
     * @param scale    how many, asked only when a new pool is made
     * @param onStatus hears the pool's status from now on, until the revision {@link #retire retires}
     */
    public ReplicaPool pool(
            String revisionId,
            String unit,
            Supplier<WorkerLaunch> launch,
            Supplier<ReplicaPool.Scale> scale,
            Consumer<PoolStatus> onStatus) {
        Shared shared;
        boolean created = false;
        synchronized (this) {
            if (deleted.contains(revisionId)) {
                throw Status.NOT_FOUND
                        .withDescription("this version of the function was deleted; call its current version")
                        .asRuntimeException();
            }
            Shared serving = byRevision.get(revisionId);
            if (serving != null) {
                return serving.pool;
            }
            shared = byUnit.get(unit);
            if (shared == null) {
                Shared fresh = new Shared(unit);
                fresh.pool = new ReplicaPool(
                        (wid, l) -> WorkerReplica.start(
                                wid, runtime, places, java, runRoot, l, executor, server, logs, answers),
                        launch.get(),
                        scale.get(),
                        executor,
                        fresh::report);
                byUnit.put(unit, fresh);
                shared = fresh;
                created = true;
            }
            shared.revisions.put(revisionId, onStatus);
            byRevision.put(revisionId, shared);
        }
        if (created) {
            shared.pool.fill();
        } else {
            onStatus.accept(shared.pool.status()); // a revision joining a serving pool learns its state at once
        }
        return shared.pool;
    }

    /** The pool of a revision if it serves. */
    public Optional<ReplicaPool> existing(String revisionId) {
        Shared shared = byRevision.get(revisionId);
        return shared == null ? Optional.empty() : Optional.of(shared.pool);
    }

    /** How many pools run (revisions sharing one count once). */
    public synchronized int size() {
        return byUnit.size();
    }

    /** A revision no longer serves: its pool's replicas stop when no other revision shares them. */
    public void retire(String revisionId) {
        ReplicaPool stop = null;
        synchronized (this) {
            Shared shared = byRevision.remove(revisionId);
            if (shared == null) {
                return;
            }
            shared.revisions.remove(revisionId);
            if (shared.revisions.isEmpty()) {
                byUnit.remove(shared.unit);
                stop = shared.pool;
            }
        }
        if (stop != null) {
            stop.close();
        }
    }

    /**
     * A deleted version's revision: it retires, and no pool is made for it again, whatever call still holds the
     * version (one queued before the delete, an evaluation run's batches, a call that read the version just before).
     */
    public void delete(String revisionId) {
        synchronized (this) {
            deleted.add(revisionId);
        }
        retire(revisionId);
    }

    /** Stops idle replicas above their pools' minimum. */
    public void reap(Instant now) {
        pools().forEach(p -> p.reap(now));
    }

    private synchronized List<ReplicaPool> pools() {
        List<ReplicaPool> all = new ArrayList<>();
        byUnit.values().forEach(s -> all.add(s.pool));
        return all;
    }

    @Override
    public void close() {
        List<ReplicaPool> all;
        synchronized (this) {
            all = pools();
            byUnit.clear();
            byRevision.clear();
        }
        all.forEach(ReplicaPool::close);
        if (cleanupAfterServer != null) {
            cleanupAfterServer.close();
        }
    }
}
