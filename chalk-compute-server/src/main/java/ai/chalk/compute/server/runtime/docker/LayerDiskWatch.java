package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.DiskReserve;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A backstop against a sandbox that fills the host's disk through its writable layer. The engine bounds a container's
 * layer only on xfs with project quotas ({@code StorageOpt size}), so elsewhere a sandbox could write until the disk
 * holding the engine's data root was full, and the host, the engine and this server had no room left. Every
 * {@value #PERIOD_MS} ms this checks that disk; once it is down to its reserve ({@link DiskReserve}: 1 GiB or a fiftieth
 * of the disk), the sandbox that wrote most to its layer since the last look (at the first, the largest), of every
 * server's on the engine, is ended when it is this server's and wrote at least {@value #MIN_LAYER_MB} MiB, saying why,
 * and its layer goes with it. A look walks every layer, so the next comes a second after one that ended a sandbox and
 * ten after one that did not. Not a quota: what a sandbox may write depends on what the others and the host leave free.
 */
final class LayerDiskWatch implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LayerDiskWatch.class);
    static final long PERIOD_MS = 250;
    /** A sandbox that wrote less is not the one filling the disk: something else is, and ending it would not help. */
    static final long MIN_LAYER_MB = 64;
    /** The pause before the next look after a sandbox was ended: its layer is gone by then. */
    private static final long RECHECK_AFTER_END_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** The pause before the next look after one that ended nothing. */
    private static final long RECHECK_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final DockerEngine engine;
    private final String serverKey;
    private final Path dataRoot;
    private final long reserve;
    private final Executor helpers;
    private final Function<String, DockerSandbox> sandboxes;
    private final java.nio.file.FileStore store;
    private final AtomicBoolean ending = new AtomicBoolean();
    private final ScheduledFuture<?> task;
    /** The layer sizes of the last look, by container (every server's on the engine); empty before the first. */
    private volatile Map<String, Long> lastSizes = Map.of();
    /** No look before this ({@link System#nanoTime}): a look walks every layer, and the disk may stay low. */
    private volatile long notBefore = System.nanoTime();

    private LayerDiskWatch(
            DockerEngine engine,
            String serverKey,
            Path dataRoot,
            java.nio.file.FileStore store,
            long reserve,
            ScheduledExecutorService scheduler,
            Executor helpers,
            Function<String, DockerSandbox> sandboxes) {
        this.store = store;
        this.engine = engine;
        this.serverKey = serverKey;
        this.dataRoot = dataRoot;
        this.reserve = reserve;
        this.helpers = helpers;
        this.sandboxes = sandboxes;
        this.task = scheduler.scheduleWithFixedDelay(this::check, PERIOD_MS, PERIOD_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * Watches the disk of the engine's data root; empty where this server cannot see it (the engine elsewhere).
     *
     * @param reserve   the bytes kept free; 0 or less for {@link DiskReserve#of}
     * @param sandboxes this server's sandbox of an id, or null
     */
    static Optional<LayerDiskWatch> start(
            DockerEngine engine,
            String serverKey,
            boolean engineHere,
            long reserve,
            ScheduledExecutorService scheduler,
            Executor helpers,
            Function<String, DockerSandbox> sandboxes) {
        Optional<Path> root = engineHere ? engine.dataRoot() : Optional.empty();
        if (root.isEmpty() || !root.get().toFile().isDirectory()) {
            return Optional.empty();
        }
        long kept;
        java.nio.file.FileStore store;
        try {
            kept = reserve > 0 ? reserve : DiskReserve.of(root.get());
            store = java.nio.file.Files.getFileStore(root.get()); // once: finding it reads the host's mount table
        } catch (IOException e) {
            return Optional.empty();
        }
        return Optional.of(
                new LayerDiskWatch(engine, serverKey, root.get(), store, kept, scheduler, helpers, sandboxes));
    }

    /** What the disk keeps free. */
    long reserve() {
        return reserve;
    }

    private void check() {
        try {
            // bytes only: a disk short of files (inodes) is not the writer of the most bytes' doing
            if (System.nanoTime() - notBefore >= 0
                    && store.getUsableSpace() < reserve
                    && ending.compareAndSet(false, true)) {
                helpers.execute(this::endLargestWriter);
            }
        } catch (IOException | RuntimeException e) {
            log.debug("Cannot check the disk of {}: {}", dataRoot, e.toString());
        }
    }

    /**
     * Ends this server's sandbox that wrote most to its layer since the last look (at the first look, the largest),
     * when that is at least {@value #MIN_LAYER_MB} MiB. Another server's container on the engine may be the writer: then
     * none of this server's is ended.
     */
    private void endLargestWriter() {
        boolean ended = false;
        try {
            List<Layer> now = engine.layers();
            Map<String, Long> before = lastSizes;
            Optional<Layer> writer = now.stream().max(Comparator.comparingLong(l -> l.grewSince(before)));
            lastSizes = now.stream().collect(Collectors.toMap(Layer::containerId, Layer::bytes, (a, b) -> a));
            if (writer.isEmpty()
                    || writer.get().grewSince(before) < MIN_LAYER_MB << 20
                    || !writer.get().serverKey().equals(serverKey)) {
                log.warn(
                        "The disk of {} is down to its reserve, and no sandbox of this server wrote {} MiB or more"
                                + " since the last look: {}",
                        dataRoot,
                        MIN_LAYER_MB,
                        DiskReserve.state(store.getUsableSpace(), reserve));
                return;
            }
            DockerSandbox sandbox = sandboxes.apply(writer.get().sandboxId());
            if (sandbox == null) {
                return;
            }
            String state = DiskReserve.state(store.getUsableSpace(), reserve);
            long mib = writer.get().grewSince(before) >> 20;
            log.warn("Ending sandbox {}: it wrote {} MiB to its writable layer, and {}", sandbox.id(), mib, state);
            sandbox.containerStopped("the sandbox wrote " + mib
                    + " MiB to its file system, the most of this server's sandboxes, while " + state);
            ended = true;
        } catch (IOException | RuntimeException e) {
            log.warn("Cannot end the sandbox filling the disk of {}: {}", dataRoot, e.toString());
        } finally {
            // the layer just removed frees the disk at once; else the disk stays low a while, and a look costs much
            notBefore = System.nanoTime() + (ended ? RECHECK_AFTER_END_NANOS : RECHECK_NANOS);
            ending.set(false);
        }
    }

    /**
     * A sandbox container's writable layer, of any server on the engine.
     *
     * @param serverKey its server's key ({@value DockerRuntime#LABEL_SERVER})
     * @param bytes     what it wrote to its layer
     */
    record Layer(String containerId, String sandboxId, String serverKey, long bytes) {

        /** What it wrote since {@code before} (by container id); all of it for a container not seen then. */
        long grewSince(Map<String, Long> before) {
            return bytes - before.getOrDefault(containerId, 0L);
        }
    }

    @Override
    public void close() {
        task.cancel(false);
    }
}
