package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.DiskReserve;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A backstop against a sandbox that fills the host's disk through its writable layer. The engine bounds a container's
 * layer only on xfs with project quotas ({@code StorageOpt size}), so elsewhere a sandbox could write until the disk
 * holding the engine's data root was full, and the host, the engine and this server had no room left. Every
 * {@value #PERIOD_MS} ms this checks that disk; once it is down to its reserve ({@link DiskReserve}: 1 GiB or a fiftieth
 * of the disk, and its files), the sandbox of this server that wrote most to its layer, at least {@value #MIN_LAYER_MB}
 * MiB, is ended, saying why, and its layer goes with it. Not a quota: what a sandbox may write depends on what the
 * others and the host leave free.
 */
final class LayerDiskWatch implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LayerDiskWatch.class);
    static final long PERIOD_MS = 250;
    /** A sandbox that wrote less is not the one filling the disk: something else is, and ending it would not help. */
    static final long MIN_LAYER_MB = 64;

    private final DockerEngine engine;
    private final String serverKey;
    private final Path dataRoot;
    private final long reserve;
    private final Executor helpers;
    private final Function<String, DockerSandbox> sandboxes;
    private final AtomicBoolean ending = new AtomicBoolean();
    private final ScheduledFuture<?> task;

    private LayerDiskWatch(
            DockerEngine engine,
            String serverKey,
            Path dataRoot,
            long reserve,
            ScheduledExecutorService scheduler,
            Executor helpers,
            Function<String, DockerSandbox> sandboxes) {
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
        try {
            kept = reserve > 0 ? reserve : DiskReserve.of(root.get());
        } catch (IOException e) {
            return Optional.empty();
        }
        return Optional.of(new LayerDiskWatch(engine, serverKey, root.get(), kept, scheduler, helpers, sandboxes));
    }

    /** What the disk keeps free. */
    long reserve() {
        return reserve;
    }

    private void check() {
        try {
            if (DiskReserve.below(dataRoot, reserve) && ending.compareAndSet(false, true)) {
                helpers.execute(this::endLargestWriter);
            }
        } catch (IOException | RuntimeException e) {
            log.debug("Cannot check the disk of {}: {}", dataRoot, e.toString());
        }
    }

    private void endLargestWriter() {
        try {
            Map<String, Long> sizes = engine.layerSizes(serverKey);
            Optional<Map.Entry<String, Long>> largest = sizes.entrySet().stream()
                    .filter(e -> e.getValue() >= MIN_LAYER_MB << 20)
                    .max(Map.Entry.comparingByValue());
            DockerSandbox sandbox =
                    largest.map(e -> sandboxes.apply(e.getKey())).orElse(null);
            if (sandbox == null) {
                return;
            }
            String state = DiskReserve.state(dataRoot, reserve);
            log.warn(
                    "Ending sandbox {}: it wrote {} MiB to its writable layer, and {}",
                    sandbox.id(),
                    largest.get().getValue() >> 20,
                    state);
            sandbox.containerStopped("the sandbox wrote " + (largest.get().getValue() >> 20)
                    + " MiB to its file system, the most of this server's sandboxes, while " + state);
        } catch (IOException | RuntimeException e) {
            log.warn("Cannot end the sandbox filling the disk of {}: {}", dataRoot, e.toString());
        } finally {
            ending.set(false);
        }
    }

    @Override
    public void close() {
        task.cancel(false);
    }
}
