package ai.chalk.compute.server.runtime.userns;

import ai.chalk.compute.server.runtime.host.LayerQuota;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The user namespaces of one local runtime's sandboxes and image build steps: each gets one of its own, with an id
 * range no account and no other sandbox has ({@link IdRanges}), handed back once nothing runs as its ids. Making one
 * takes a process start, a few milliseconds of a create, so {@link #SPARES} are made ahead, off the create path.
 * Whether this host can give sandboxes user namespaces at all is tried once, when the pool starts.
 *
 * <p>The pool owns the thread that works as its sandboxes' root on the host ({@code chalk-sandbox-root}, see
 * {@link UserNamespace#asRoot}); closing the pool ends it, so each runtime has its own and a closed one leaves none.
 */
public final class UserNamespacePool implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(UserNamespacePool.class);
    /** How many user namespaces are made ahead. */
    static final int SPARES = 2;
    /** How long after a sandbox takes one the next is made, so that it does not compete with that sandbox's start. */
    private static final long SPARE_DELAY_MILLIS = 100;
    /** How long {@link #close()} lets root work under way finish. */
    private static final long CLOSE_WAIT_SECONDS = 5;

    private final IdRanges ranges;
    private final UserNamespace.HolderTools holderTools;
    private final Executor helpers;
    private final String problem;
    /** Where the namespaces' root work runs; null when the pool hands out none. */
    private final ExecutorService root;

    private final Queue<CompletableFuture<UserNamespace>> spares = new ConcurrentLinkedQueue<>();
    private volatile boolean closed;

    private UserNamespacePool(
            IdRanges ranges,
            UserNamespace.HolderTools holderTools,
            Executor helpers,
            ExecutorService root,
            String problem) {
        this.ranges = ranges;
        this.holderTools = holderTools;
        this.helpers = helpers;
        this.root = root;
        this.problem = problem;
    }

    /**
     * A pool for sandboxes whose state lives in {@code stateDir}, after trying there what every sandbox needs (see
     * {@link #probe}); when that fails, the pool hands out no namespaces and {@link #problem()} says why.
     *
     * @param holderTools the host's tools that start a namespace's holder
     * @param helpers where namespaces are made ahead
     */
    public static UserNamespacePool start(Path stateDir, UserNamespace.HolderTools holderTools, Executor helpers) {
        IdRanges ranges = new IdRanges(IdRanges.DEFAULT_BASE, IdRanges.DEFAULT_SLOTS);
        ExecutorService root = Executors.newSingleThreadExecutor(DaemonThreads.named("chalk-sandbox-root"));
        UserNamespacePool pool = new UserNamespacePool(
                ranges,
                holderTools,
                helpers,
                root,
                probe(ranges, stateDir, holderTools, root).orElse(null));
        if (pool.problem == null) {
            for (int i = 0; i < SPARES; i++) {
                pool.spares.add(CompletableFuture.supplyAsync(pool::makeUnchecked, helpers));
            }
        }
        return pool;
    }

    /** A pool that hands out no namespaces, for runtimes without isolation. */
    public static UserNamespacePool none(String why) {
        return new UserNamespacePool(new IdRanges(IdRanges.DEFAULT_BASE, 1), null, Runnable::run, null, why);
    }

    /** Why sandboxes run without a user namespace of their own here; empty when they have one. */
    public Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /**
     * Tries what every isolated sandbox needs for a user namespace of its own: creating one with a mapped range, and
     * id-mapping a tmpfs (its layer) and a directory of the state directory's file system (its image layers and
     * volumes). Kernels before 6.3 cannot id-map tmpfs, nor can some file systems be id-mapped.
     */
    private static Optional<String> probe(
            IdRanges ranges, Path stateDir, UserNamespace.HolderTools holderTools, ExecutorService root) {
        Optional<IdRange> range = ranges.acquire();
        Path probe = stateDir.resolve("userns-probe");
        try (UserNamespace ns = UserNamespace.create(range.orElseThrow(), ProcessBuilder::start, holderTools, root)) {
            NoFollowDelete.delete(probe);
            Files.createDirectories(probe.resolve("tmpfs"));
            Files.createDirectories(probe.resolve("mapped"));
            ns.attachIdMapped(stateDir, probe.resolve("mapped"));
            LayerQuota.unmount(probe.resolve("mapped"));
            LayerQuota.mount(probe.resolve("tmpfs"), 1 << 20);
            Files.createDirectories(probe.resolve("tmpfs").resolve("mapped"));
            ns.attachIdMapped(probe.resolve("tmpfs"), probe.resolve("tmpfs").resolve("mapped"));
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.of(e.getMessage());
        } finally {
            LayerQuota.unmount(probe.resolve("tmpfs"));
            LayerQuota.unmount(probe.resolve("mapped"));
            try {
                NoFollowDelete.delete(probe);
            } catch (IOException e) {
                log.debug("Cannot remove {}: {}", probe, e.toString());
            }
            range.ifPresent(ranges::release);
        }
    }

    /**
     * A user namespace with an id range of its own; empty when this host cannot give one ({@link #problem()}). One
     * made ahead when there is one, and another is made behind it.
     */
    public Optional<UserNamespace> create() throws IOException {
        if (problem != null) {
            return Optional.empty();
        }
        CompletableFuture<UserNamespace> ready = null;
        for (CompletableFuture<UserNamespace> f : spares) {
            if (f.isDone() && spares.remove(f)) {
                ready = f;
                break;
            }
        }
        if (!closed && spares.size() < SPARES) {
            spares.add(CompletableFuture.supplyAsync(
                    this::makeUnchecked,
                    CompletableFuture.delayedExecutor(SPARE_DELAY_MILLIS, TimeUnit.MILLISECONDS, helpers)));
        }
        if (ready != null) {
            try {
                return Optional.of(ready.join());
            } catch (CompletionException e) {
                log.debug("A user namespace made ahead failed: {}", e.getCause().toString());
            }
        }
        return Optional.of(make());
    }

    private UserNamespace makeUnchecked() {
        try {
            return make();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private UserNamespace make() throws IOException {
        IdRange range = ranges.acquire()
                .orElseThrow(
                        () -> new IOException("all " + IdRanges.DEFAULT_SLOTS + " id ranges of sandboxes are in use"));
        try {
            return UserNamespace.create(range, ProcessBuilder::start, holderTools, root);
        } catch (IOException | RuntimeException e) {
            ranges.release(range);
            throw e;
        }
    }

    /** Hands a range back once nothing runs as its ids any more (its sandbox or build step is gone). */
    public void release(IdRange range) {
        ranges.release(range);
    }

    /**
     * Ends the namespaces made ahead (those handed out are their holders' to end) and the root thread, once the root
     * work under way is done: later work as a sandbox's root fails.
     */
    @Override
    public void close() {
        closed = true;
        CompletableFuture<UserNamespace> spare;
        while ((spare = spares.poll()) != null) {
            spare.thenAccept(ns -> {
                ns.close();
                ranges.release(ns.range());
            });
        }
        if (root != null) {
            root.shutdown();
            try {
                if (!root.awaitTermination(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
                    log.warn(
                            "Work as a sandbox's root did not end within {} s of the runtime's close",
                            CLOSE_WAIT_SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
