package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import ai.chalk.compute.server.runtime.host.SandboxHostnames;
import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes of the {@link LocalRuntime} started ahead of time, a few per recently created {@link Key spec}, so that a
 * create becomes a hand-over: the sandbox gets the create's id, host name, environment and entrypoint, and is never
 * handed out twice. A create that finds none (a spec not seen lately, an empty pool) takes the normal path, and the
 * pool refills in the background on one thread of its own.
 *
 * <p>Only what is the same for every sandbox of a spec is made ahead: the namespaces, the fresh writable layer, the
 * cgroups with the spec's limits, the user namespace with an id range of its own, the mounts and the network. Specs
 * whose start binds something of a create's own (volumes, an initial file system, a network policy and its proxy
 * link) never come from the pool. The id is bound at hand-over: the host name is set in the sandbox's UTS namespace
 * then; its state directory and cgroups keep the name they had in the pool ({@code _pool-N}, which no sandbox id can
 * be), seen by no one inside (the sandbox has its own cgroup namespace), with a link {@code sandboxes/<id>} to the
 * directory. A pooled sandbox is handed over only if its
 * image and the host's system view are still those a fresh start would use now; otherwise it is thrown away.
 * Pooled sandboxes hold places under the runtime's limit on sandboxes, and give them up to a create that needs one.
 * Only sandboxes of bubblewrap are pooled (see the constructor).
 */
final class SandboxPool implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SandboxPool.class);
    /** How long a spec stays warm after its last create. */
    static final long KEEP_WARM_NANOS = TimeUnit.MINUTES.toNanos(10);
    /** How many distinct specs are kept warm at once; the one created least recently goes first. */
    static final int MAX_SPECS = 4;
    /** How long after a hand-over the pool starts its replacement (see {@link #refillSoon}). */
    static final long REFILL_DELAY_MILLIS = 50;
    /** Starts in a row that fail before the pool stops starting sandboxes of a spec. */
    private static final int GIVE_UP_AFTER = 3;

    /**
     * What of a spec a sandbox's start binds, and nothing of a create's own: two creates with the same key get
     * sandboxes that differ only in what is set at hand-over.
     */
    record Key(String image, String workdir, SandboxSpec.ResourceLimits limits, boolean network) {

        /** The key of {@code spec}; empty when its start binds something of its own. */
        static Optional<Key> of(SandboxSpec spec) {
            if (!spec.volumes().isEmpty()
                    || spec.initialFilesystem().isPresent()
                    || spec.egress().isPresent()) {
                return Optional.empty();
            }
            return Optional.of(new Key(spec.image(), spec.workdir(), spec.limits(), spec.network()));
        }

        /** A spec of this key with nothing of a create's own (the id is a placeholder: the name is the pool's). */
        SandboxSpec spec() {
            return new SandboxSpec(
                    "pool", image, Map.of(), workdir, limits, network, List.of(), List.of(), Optional.empty());
        }
    }

    /** A sandbox waiting for a create, with the spare exec helpers started in it. */
    private record Idle(
            String name, SandboxStart.Prepared prepared, List<CompletableFuture<SpareExecs.Spare>> spares) {}

    private final LocalRuntime runtime;
    private final RunningSandboxes places;
    private final int size;
    private final SandboxHostnames hostnames = new SandboxHostnames();
    private final ExecutorService filler = Executors.newSingleThreadExecutor(DaemonThreads.named("chalk-local-pool"));
    private final AtomicBoolean fillQueued = new AtomicBoolean();
    private final AtomicInteger names = new AtomicInteger();
    /** Per key, the sandboxes waiting (guarded by this). */
    private final Map<Key, Deque<Idle>> idle = new HashMap<>();
    /** Keys by when they were last wanted (nanoTime), least recent first (guarded by this). */
    private final LinkedHashMap<Key, Long> wanted = new LinkedHashMap<>(16, 0.75f, true);
    /** Failed starts in a row per key (guarded by this). */
    private final Map<Key, Integer> failures = new HashMap<>();

    private final ScheduledFuture<?> expiry;
    private volatile boolean enabled;
    private volatile boolean closed;

    /**
     * @param size sandboxes kept ready per spec; 0 for none (every create takes the normal path)
     */
    SandboxPool(LocalRuntime runtime, RunningSandboxes places, int size) {
        this.runtime = runtime;
        this.places = places;
        this.size = size;
        // the pool sets host names at hand-over, in a namespace only an isolated sandbox has; unshare's init script is
        // handed its host name as an argument, which a hand-over would not change: only bubblewrap's are pooled
        this.enabled = size > 0 && runtime.level() == LocalRuntime.Level.BUBBLEWRAP;
        this.expiry = runtime.scheduler().scheduleWithFixedDelay(this::queueFill, 30, 30, TimeUnit.SECONDS);
    }

    /**
     * Hands a waiting sandbox of {@code spec}'s key over to the create of {@code spec}, with the create's id reserved;
     * null when there is none (or it no longer fits), for the normal path. Either way the key counts as wanted.
     *
     * @throws RuntimeStartException when the spec cannot start here, or a sandbox with its id runs already
     */
    @Nullable
    LocalSandbox take(SandboxSpec spec) throws RuntimeStartException {
        if (!enabled || closed) {
            return null;
        }
        Optional<Key> key = Key.of(spec);
        if (key.isEmpty()) {
            return null;
        }
        Idle entry;
        synchronized (this) {
            wanted.put(key.get(), System.nanoTime());
            Deque<Idle> q = idle.get(key.get());
            entry = q == null ? null : q.pollFirst();
        }
        if (entry == null) {
            queueFill();
            return null;
        }
        refillSoon();
        return handOver(spec, key.get(), entry);
    }

    private @Nullable LocalSandbox handOver(SandboxSpec spec, Key key, Idle entry) throws RuntimeStartException {
        SandboxStart.Resolved now;
        try {
            now = SandboxStart.resolve(runtime, spec);
        } catch (RuntimeStartException | RuntimeException e) {
            discardLater(entry);
            throw e;
        }
        SandboxStart.Resolved then = entry.prepared().resolved();
        SandboxStart.Started started = entry.prepared().started();
        if (!Objects.equals(now.image(), then.image())
                || !Objects.equals(now.view(), then.view())
                || !now.workdir().equals(then.workdir())
                || !started.init().process().isAlive()) {
            log.debug("Pooled sandbox {} no longer fits a fresh start of its spec; thrown away", entry.name());
            discardLater(entry);
            return null;
        }
        try {
            places.reserve(spec.id(), entry.name());
        } catch (RuntimeStartException e) {
            synchronized (this) { // a duplicate id: the sandbox stays in the pool, untouched
                idle.computeIfAbsent(key, k -> new ArrayDeque<>()).addFirst(entry);
            }
            throw e;
        }
        Path byId = runtime.sandboxesDir().resolve(spec.id());
        try {
            // its state directory under its id too, as every sandbox's is (a mount point cannot be renamed)
            Files.createSymbolicLink(byId, Path.of(entry.name()));
        } catch (IOException e) {
            places.abandon(spec.id()); // something of that name is left over: the normal path deals with it
            discardLater(entry);
            return null;
        }
        if (!LocalSandbox.stillTheInit(started.init().pid(), started.init().pidNamespace())) {
            // its init has ended: setns would join what got its pid since. The normal path starts another
            deleteLink(byId);
            places.abandon(spec.id());
            discardLater(entry);
            return null;
        }
        try {
            hostnames.set(started.init().pid(), SandboxHostname.of(spec.id()));
        } catch (IOException e) {
            deleteLink(byId);
            places.abandon(spec.id());
            discardLater(entry);
            enabled = false;
            log.warn("Sandboxes are not started ahead of time on this host: {}", e.getMessage());
            return null;
        }
        try {
            return LocalSandbox.handOver(runtime, spec, now, started, entry.spares());
        } catch (RuntimeStartException | RuntimeException e) {
            places.abandon(spec.id()); // its entrypoint did not start: the sandbox is terminated already
            throw e;
        }
    }

    /** Removes the link {@code sandboxes/<id>} of a handed-over sandbox, never anything else of that name. */
    static void deleteLink(Path byId) {
        try {
            if (Files.isSymbolicLink(byId)) {
                Files.delete(byId);
            }
        } catch (IOException e) {
            log.warn("Cannot remove the link {}: {}", byId, e.toString());
        }
    }

    /** The host pids of the waiting sandboxes' inits; for tests. */
    synchronized List<Long> initPids() {
        return idle.values().stream()
                .flatMap(Deque::stream)
                .map(i -> i.prepared().started().init().pid())
                .toList();
    }

    /** Sandboxes waiting now, of every spec. */
    synchronized int idle() {
        return idle.values().stream().mapToInt(Deque::size).sum();
    }

    /**
     * Gives up one waiting sandbox, the one of the spec created least recently, so that a create finding every place
     * taken gets its place; false when none waits.
     */
    boolean evictOne() {
        Idle victim = null;
        synchronized (this) {
            for (Key k : wanted.keySet()) {
                Deque<Idle> q = idle.get(k);
                if (q != null && !q.isEmpty()) {
                    victim = q.pollLast();
                    break;
                }
            }
        }
        if (victim == null) {
            return false;
        }
        places.releasePooled(victim.name()); // its place is the create's now; it dies in the background
        discardLater(victim);
        return true;
    }

    /**
     * Refills after a hand-over, {@link #REFILL_DELAY_MILLIS} later: a sandbox's start takes a core for as long as a
     * create would, and the create's first exec, which comes right after, should not share the CPU with it.
     */
    private void refillSoon() {
        try {
            runtime.scheduler().schedule(this::queueFill, REFILL_DELAY_MILLIS, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the runtime is closing: nothing to refill
        }
    }

    private void queueFill() {
        if (enabled && !closed && fillQueued.compareAndSet(false, true)) {
            try {
                filler.execute(() -> {
                    fillQueued.set(false);
                    fill();
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                fillQueued.set(false); // closed meanwhile
            }
        }
    }

    /** On the filler thread: forgets specs not wanted lately, then starts sandboxes until each wanted spec has its. */
    private void fill() {
        expire();
        while (enabled && !closed) {
            Key key = nextShort();
            if (key == null) {
                return;
            }
            String name = "_pool-" + names.incrementAndGet();
            if (!places.reservePooled(name, 1)) {
                return; // the places left are the creates'
            }
            Idle entry;
            try {
                SandboxStart.Prepared p = SandboxStart.startAs(runtime, key.spec(), name, "pool");
                List<CompletableFuture<SpareExecs.Spare>> spares = new ArrayList<>();
                for (int i = 0; i < SpareExecs.SPARES; i++) {
                    spares.add(CompletableFuture.supplyAsync(
                            () -> LocalSandbox.spawnSpare(runtime, name, p.started()), runtime.helpers()));
                }
                entry = new Idle(name, p, spares);
                ready(spares);
            } catch (RuntimeStartException | RuntimeException e) {
                places.releasePooled(name);
                failed(key, e);
                continue;
            }
            boolean keep;
            synchronized (this) {
                failures.remove(key);
                keep = !closed && wanted.containsKey(key);
                if (keep) {
                    idle.computeIfAbsent(key, k -> new ArrayDeque<>()).addLast(entry);
                }
            }
            if (!keep) {
                discardNow(entry);
            }
        }
    }

    /**
     * Waits for the spare helpers to have entered the sandbox, so that a waiting sandbox is ready to the last piece:
     * its first exec takes a spare helper rather than the direct path.
     */
    private static void ready(List<CompletableFuture<SpareExecs.Spare>> spares) {
        for (CompletableFuture<SpareExecs.Spare> f : spares) {
            try {
                SpareExecs.Spare s = f.get(5, TimeUnit.SECONDS);
                if (s != null) {
                    s.pids().get(5, TimeUnit.SECONDS);
                }
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                // a helper that failed or is slow is only a slower first exec; the sandbox itself is fine
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private synchronized void failed(Key key, Exception e) {
        int n = failures.merge(key, 1, Integer::sum);
        log.debug("Cannot start a sandbox ahead of time for {}: {}", key, e.toString());
        if (n >= GIVE_UP_AFTER) {
            wanted.remove(key); // wanted again by its next create
            failures.remove(key);
            log.info("Sandboxes of {} are not started ahead of time: {}", key, e.getMessage());
        }
    }

    /** A wanted key with fewer than {@link #size} sandboxes waiting, least recently wanted last; null for none. */
    private synchronized @Nullable Key nextShort() {
        Key found = null;
        for (Key k : wanted.keySet()) {
            Deque<Idle> q = idle.get(k);
            if (q == null || q.size() < size) {
                found = k; // the most recently wanted wins: later in access order
            }
        }
        return found;
    }

    /** Forgets the specs not wanted for {@link #KEEP_WARM_NANOS}, and the least recent beyond {@link #MAX_SPECS}. */
    private void expire() {
        List<Idle> gone = new ArrayList<>();
        synchronized (this) {
            long now = System.nanoTime();
            int over = wanted.size() - MAX_SPECS;
            for (Iterator<Map.Entry<Key, Long>> it = wanted.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<Key, Long> e = it.next();
                if (over-- > 0 || now - e.getValue() > KEEP_WARM_NANOS) {
                    it.remove();
                    failures.remove(e.getKey()); // a spec's failed starts, kept while it was wanted
                    Deque<Idle> q = idle.remove(e.getKey());
                    if (q != null) {
                        gone.addAll(q);
                    }
                }
            }
        }
        gone.forEach(this::discardNow);
    }

    private void discardLater(Idle entry) {
        try {
            runtime.helpers().execute(() -> discardNow(entry));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            discardNow(entry);
        }
    }

    private void discardNow(Idle entry) {
        try {
            LocalSandbox.discard(runtime, entry.name(), entry.prepared().started(), entry.spares());
        } finally {
            places.releasePooled(entry.name());
        }
    }

    /** Starts nothing more and ends every waiting sandbox; returns once they are gone. */
    @Override
    public void close() {
        closed = true;
        expiry.cancel(false);
        filler.shutdown();
        try {
            filler.awaitTermination(60, TimeUnit.SECONDS); // a start under way ends first, then sees closed
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<Idle> all = new ArrayList<>();
        synchronized (this) {
            idle.values().forEach(all::addAll);
            idle.clear();
            wanted.clear();
        }
        List<CompletableFuture<Void>> ends = new ArrayList<>();
        for (Idle entry : all) {
            ends.add(CompletableFuture.runAsync(() -> discardNow(entry), runtime.helpers()));
        }
        ends.forEach(f -> f.handle((v, e) -> null).join());
        hostnames.close();
    }
}
