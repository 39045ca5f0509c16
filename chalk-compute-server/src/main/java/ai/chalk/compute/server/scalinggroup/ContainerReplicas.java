package ai.chalk.compute.server.scalinggroup;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.sandbox.SandboxManager;
import ai.chalk.compute.server.store.SandboxRecord;
import ai.chalk.compute.server.store.SandboxState;
import ai.chalk.compute.server.worker.CrashLoopBackoff;
import ai.chalk.compute.server.worker.PoolStatus;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replicas of a plain scaling group's revision: {@code min_replicas} sandboxes running the container spec
 * (image, entrypoint, env), replaced when they stop or fail to start, after a wait that grows while they keep
 * stopping young ({@link CrashLoopBackoff}).
 */
final class ContainerReplicas implements RevisionRunner {

    private static final Logger log = LoggerFactory.getLogger(ContainerReplicas.class);
    private final SandboxManager sandboxes;
    private final String environment;
    private final ChalkContainerSpec spec;
    private final int min;
    private final String revisionId;
    private final Executor executor;
    private final Consumer<PoolStatus> onStatus;
    private final List<String> ids = new ArrayList<>();
    /** When each replica in {@link #ids} started ({@link System#nanoTime()}). */
    private final Map<String, Long> startedAt = new HashMap<>();

    private final CrashLoopBackoff restarts = new CrashLoopBackoff();
    private int starting;
    private Optional<String> lastError = Optional.empty();
    private boolean closed;
    private final Object reporting = new Object();

    /** @param environment the group's: its replicas are that environment's sandboxes */
    ContainerReplicas(
            SandboxManager sandboxes,
            String environment,
            String revisionId,
            ScalingGroupSpec spec,
            Executor executor,
            Consumer<PoolStatus> onStatus) {
        this.sandboxes = sandboxes;
        this.environment = environment;
        this.spec = spec.getContainerSpec();
        this.min = spec.getScalingSpec().getMinReplicas();
        this.revisionId = revisionId;
        this.executor = executor;
        this.onStatus = onStatus;
    }

    /** Starts replicas in the background until {@code min} run. */
    void fill() {
        int missing;
        long wait;
        synchronized (this) {
            missing = closed ? 0 : min - ids.size() - starting;
            starting += Math.max(0, missing);
            wait = restarts.waitNanos();
        }
        Executor starts = wait > 0 ? CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS, executor) : executor;
        for (int i = 0; i < missing; i++) {
            starts.execute(this::startOne);
        }
        report();
    }

    private void startOne() {
        synchronized (this) {
            if (closed) { // stopped serving while the start waited out the backoff
                starting--;
                return;
            }
        }
        String id = null;
        String error = null;
        try {
            id = sandboxes.create(environment, spec, Optional.empty()).id();
        } catch (StatusRuntimeException e) {
            error = "a replica of revision " + revisionId + " could not start: "
                    + e.getStatus().getDescription();
        } catch (ComputeException e) {
            error = "a replica of revision " + revisionId + " could not start: " + e.getMessage();
        } catch (RuntimeException e) {
            error = "a replica of revision " + revisionId + " could not start: " + e;
        }
        boolean stop;
        synchronized (this) {
            starting--;
            stop = closed && id != null;
            if (id != null && !closed) {
                ids.add(id);
                startedAt.put(id, System.nanoTime());
            }
            if (error != null) {
                restarts.died(Duration.ZERO);
                error += restarts.reason();
                lastError = Optional.of(error);
            }
        }
        if (stop) {
            terminate(id);
        }
        if (error != null) {
            log.warn(error);
            fill(); // tried again once the wait is over
        } else {
            report();
        }
    }

    /**
     * Serialised, so the last status recorded is the last one computed: two replicas finishing their start at once
     * must not leave "pending" recorded after "ready".
     */
    private void report() {
        synchronized (reporting) {
            onStatus.accept(status());
        }
    }

    @Override
    public synchronized PoolStatus status() {
        int ready = (int) ids.stream().filter(this::running).count();
        String status =
                ready >= min ? "ready" : lastError.isPresent() ? (ready > 0 ? "degraded" : "failed") : "pending";
        return new PoolStatus(status, lastError, ready, ready);
    }

    private boolean running(String id) {
        try {
            SandboxRecord r = sandboxes.get(environment, id);
            return r.state() == SandboxState.RUNNING;
        } catch (StatusRuntimeException | ComputeException e) {
            return false;
        }
    }

    @Override
    public void tick(Instant now) {
        List<String> gone = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            for (String id : List.copyOf(ids)) {
                if (!running(id)) {
                    ids.remove(id);
                    restarts.died(Duration.ofNanos(System.nanoTime() - startedAt.remove(id)));
                    gone.add(id);
                }
            }
            if (!gone.isEmpty()) {
                lastError = Optional.of(
                        "replica sandbox " + String.join(", ", gone) + " stopped; replacing it" + restarts.reason());
            }
        }
        if (!gone.isEmpty()) {
            log.warn("Replicas {} of revision {} stopped; replacing them", gone, revisionId);
            fill();
        }
    }

    @Override
    public void close() {
        List<String> all;
        synchronized (this) {
            closed = true;
            all = List.copyOf(ids);
            ids.clear();
            startedAt.clear();
        }
        all.forEach(this::terminate);
    }

    private void terminate(String id) {
        try {
            sandboxes.terminate(
                    environment,
                    id,
                    Duration.ofSeconds(2),
                    "its scaling group revision " + revisionId + " stopped serving");
        } catch (RuntimeException e) {
            log.debug("Terminating replica {} failed: {}", id, e.toString());
        }
    }
}
