package ai.chalk.compute.server.worker;

import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replicas of one revision. A call goes to the ready replica with the fewest calls in flight that has room (its
 * {@link CallPolicy#maxConcurrent()}); when every replica is busy and fewer than {@code max} run, the call starts a
 * new one and takes it; when none has room and none may start, it waits for room. Idle replicas above {@code min}
 * stop after the shutdown delay; a replica that dies is replaced while fewer than {@code min} run (after a wait that
 * grows while replicas keep dying young: {@link CrashLoopBackoff}), and a call it was running is tried again on
 * another replica as often as the policy allows. The status is reported on every change
 * of the replicas (start, failure, death, scale-down) and after a call only when the call changed it, so that a warm
 * call costs no status write.
 */
public final class ReplicaPool implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ReplicaPool.class);

    /** The longest a call waits out the pause after young deaths for the next start; past it, it fails at once. */
    static final Duration MAX_WAIT_FOR_RESTART = Duration.ofSeconds(10);

    /**
     * How many replicas a revision runs.
     *
     * @param min           kept running
     * @param max           at most
     * @param shutdownDelay how long a replica above {@code min} may stay idle
     * @param calls         concurrency per replica and retries
     */
    public record Scale(int min, int max, Duration shutdownDelay, CallPolicy calls) {}

    private final WorkerStarter starter;
    private final WorkerLaunch launch;
    private final Scale scale;
    private final ExecutorService executor;
    private final Consumer<PoolStatus> onStatus;
    private final List<WorkerReplica> replicas = new ArrayList<>();
    private int starting;
    /** Calls waiting in {@link #acquire} for room; only they need waking when a call ends. */
    private volatile int waiting;

    private Optional<String> lastError = Optional.empty();
    private boolean lastStartFailed; // a worker that died after serving does not make a pool scaled to zero failed
    private final CrashLoopBackoff restarts = new CrashLoopBackoff();
    /** Starts that failed, in all: a call waiting for a start learns from it that the start it waited for failed. */
    private int startFailures;

    private boolean closed;
    private final Object reporting = new Object();
    private volatile PoolStatus reported;

    /** Starts one replica of a launch (the runtime and run directory are the starter's). */
    @FunctionalInterface
    public interface WorkerStarter {
        WorkerReplica start(String id, WorkerLaunch launch) throws WorkerDiedException;
    }

    public ReplicaPool(
            WorkerStarter starter,
            WorkerLaunch launch,
            Scale scale,
            ExecutorService executor,
            Consumer<PoolStatus> onStatus) {
        this.starter = starter;
        this.launch = launch;
        this.scale = scale;
        this.executor = executor;
        this.onStatus = onStatus;
    }

    /**
     * Starts replicas in the background until {@code min} run: at once, or once the wait after replicas that died
     * young is over ({@link CrashLoopBackoff}).
     */
    public void fill() {
        int missing;
        long wait;
        synchronized (this) {
            missing = closed ? 0 : scale.min() - replicas.size() - starting;
            starting += Math.max(0, missing);
            wait = restarts.waitNanos();
        }
        Executor starts = wait > 0 ? CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS, executor) : executor;
        for (int i = 0; i < missing; i++) {
            starts.execute(() -> {
                try {
                    startCounted();
                } catch (WorkerDiedException e) {
                    // recorded as the pool's last error
                }
            });
        }
        report();
    }

    /**
     * Routes one call and returns the worker's answer. A call whose worker dies under it is tried again on another
     * replica (after the policy's backoff) as often as {@link CallPolicy#maxRetries()} allows.
     *
     * @param timeout how long the function may run, for each attempt; waiting for room on a busy replica is bounded
     *                by it too (waiting for a starting replica, by the ready timeout)
     * @throws io.grpc.StatusRuntimeException the worker's status and trailers; UNAVAILABLE when no replica could
     *                                        start or the worker died during the last attempt; DEADLINE_EXCEEDED
     *                                        when no replica had room within the timeout
     */
    public CallFunctionResponse call(CallFunctionRequest request, String callId, Duration timeout) {
        return call(request, callId, timeout, () -> true);
    }

    /**
     * Routes one call as {@link #call(CallFunctionRequest, String, Duration)} does, asking {@code proceed} once a
     * replica has room for it: a queued call that was purged meanwhile answers {@code false} and is dropped.
     *
     * @throws io.grpc.StatusRuntimeException as above, and CANCELLED when {@code proceed} said no
     */
    public CallFunctionResponse call(
            CallFunctionRequest request, String callId, Duration timeout, BooleanSupplier proceed) {
        return call(request, callId, timeout, proceed, 0, System.nanoTime() + timeout.toNanos());
    }

    private CallFunctionResponse call(
            CallFunctionRequest request,
            String callId,
            Duration timeout,
            BooleanSupplier proceed,
            int firstAttempt,
            long deadline) {
        for (int attempt = firstAttempt; ; attempt++) {
            WorkerReplica replica = acquire(deadline);
            boolean go;
            try {
                go = attempt > 0 || proceed.getAsBoolean();
            } catch (RuntimeException | Error e) {
                replica.release();
                released();
                throw e;
            }
            if (!go) {
                replica.release();
                released();
                throw Status.CANCELLED
                        .withDescription("call " + callId + " was purged before it ran")
                        .asRuntimeException();
            }
            try {
                return replica.call(request, callId, timeout);
            } catch (WorkerDiedException e) {
                lost(replica, e, attempt, callId);
            } finally {
                released();
            }
        }
    }

    /**
     * Routes one call as {@link #call(CallFunctionRequest, String, Duration)} does, without holding the calling thread
     * while the worker runs it: the answer goes to {@code outcome} from the transport's thread, which a warm call
     * thereby never leaves (no thread hand-off per call). Waiting for room or for a starting replica happens on the
     * calling thread before the call is sent; a failed attempt (to tell a worker's death from its answer, and to try
     * again) is handled on the pool's executor, in the caller's {@link Context}, so that cancellation still reaches
     * the worker.
     *
     * @param outcome gets the answer, or exactly one failure: the worker's status and trailers, or a status as
     *                {@link #call(CallFunctionRequest, String, Duration)} throws it
     */
    public void callAsync(CallFunctionRequest request, String callId, Duration timeout, Outcome outcome) {
        long deadline = System.nanoTime() + timeout.toNanos();
        WorkerReplica replica = acquire(deadline);
        Context context = Context.current();
        try {
            replica.send(request, callId, timeout, (response, failure) -> {
                if (failure == null) {
                    releasedWithoutReport();
                    outcome.answered(response);
                    return;
                }
                // telling a death from an answer waits for the worker's exit; a retry may wait for a replica
                try {
                    executor.execute(
                            context.wrap(() -> failed(replica, request, callId, timeout, deadline, failure, outcome)));
                } catch (RejectedExecutionException e) { // the server is stopping
                    released();
                    outcome.failed(failure);
                }
            });
        } catch (RuntimeException | Error e) {
            released();
            throw e;
        }
    }

    /** Where an asynchronous call's outcome goes. */
    public interface Outcome {
        void answered(CallFunctionResponse response);

        void failed(StatusRuntimeException status);
    }

    private void failed(
            WorkerReplica replica,
            CallFunctionRequest request,
            String callId,
            Duration timeout,
            long deadline,
            StatusRuntimeException failure,
            Outcome outcome) {
        CallFunctionResponse response;
        try {
            try {
                throw replica.diedOr(failure, callId);
            } catch (WorkerDiedException e) {
                lost(replica, e, 0, callId);
            } finally {
                released();
            }
            response = call(request, callId, timeout, () -> true, 1, deadline);
        } catch (StatusRuntimeException e) {
            outcome.failed(e);
            return;
        } catch (RuntimeException e) {
            outcome.failed(Status.INTERNAL
                    .withDescription("call " + callId + " failed: " + e)
                    .withCause(e)
                    .asRuntimeException());
            return;
        }
        outcome.answered(response);
    }

    /**
     * A worker died under attempt {@code attempt} of a call: drops the replica and pauses for the policy's backoff
     * before the next attempt, or throws UNAVAILABLE when the policy allows no more.
     */
    private void lost(WorkerReplica replica, WorkerDiedException e, int attempt, String callId) {
        // the next attempt may start a replica: the dead one gives its place back first (its sandbox's end takes a
        // second at most; the wait is bounded all the same)
        try {
            died(replica, e.getMessage()).get(10, TimeUnit.SECONDS);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException notClosed) {
            log.debug("Replica {} not closed before the next attempt of call {}: {}", replica.id(), callId, notClosed);
        }
        if (attempt >= scale.calls().maxRetries()) {
            throw Status.UNAVAILABLE
                    .withDescription(e.getMessage() + (attempt > 0 ? " (tried " + (attempt + 1) + " times)" : ""))
                    .asRuntimeException();
        }
        Duration backoff = scale.calls().backoff(attempt + 1);
        log.info(
                "Call {} lost its worker; trying again in {} ms (retry {} of {})",
                callId,
                backoff.toMillis(),
                attempt + 1,
                scale.calls().maxRetries());
        pause(backoff, callId);
    }

    /**
     * {@link #released()} for a call the worker answered, on a transport thread: wakes calls waiting for room, if any.
     * An answered call changes no part of the status that is reported (the state and message follow the replicas'
     * starts, deaths and stops, each reported where it happens), so, unlike {@link #released()}, it computes none:
     * a warm call takes the pool's lock, which all callers share, only once, in {@link #acquire}.
     */
    private void releasedWithoutReport() {
        // no lock to read the count: acquire raises it before it reads the replicas' calls in flight, and the replica
        // lowered its count before this read, so either the waiter sees the room or this sees the waiter
        if (waiting > 0) {
            synchronized (this) {
                notifyAll();
            }
        }
    }

    private void released() {
        synchronized (this) {
            notifyAll(); // a call waiting for room may take this replica now
        }
        reportIfChanged(); // outside the pool's lock: reporting takes it to read the status
    }

    /** Why starts wait, if they do (under the pool's lock). */
    private synchronized String reason() {
        return restarts.reason();
    }

    private static void pause(Duration backoff, String callId) {
        try {
            Thread.sleep(backoff.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw Status.CANCELLED
                    .withDescription("call " + callId + " was interrupted")
                    .asRuntimeException();
        }
    }

    /**
     * A replica with room for one more call, reserved for it. When every replica is busy and the pool may grow, the
     * call starts a new replica and takes it (scale-up on calls in flight); when none has room and the pool may not
     * grow, it waits for room until {@code roomDeadline}, or for a starting replica up to the ready timeout.
     */
    private WorkerReplica acquire(long roomDeadline) {
        long startDeadline = System.nanoTime() + launch.readyTimeout().toNanos();
        synchronized (this) {
            int failuresSeen = startFailures;
            // counted before the replicas are read: a call that ends after this read sees the count and wakes it
            waiting++;
            try {
                while (true) {
                    if (closed) {
                        throw Status.UNAVAILABLE
                                .withDescription("revision " + launch.revisionId()
                                        + " no longer serves: its traffic moved or it was deleted; call again")
                                .asRuntimeException();
                    }
                    // a replica whose worker just exited stays listed until its exit handler closes and replaces it;
                    // a plain loop: every call passes here under the pool's lock, which 16 callers contend for
                    CallPolicy calls = scale.calls();
                    int alive = 0;
                    WorkerReplica best = null;
                    int bestInFlight = Integer.MAX_VALUE;
                    for (WorkerReplica r : replicas) {
                        if (!r.alive()) {
                            continue;
                        }
                        alive++;
                        int inFlight = r.inFlight();
                        if (inFlight < bestInFlight && calls.hasRoom(inFlight)) {
                            best = r;
                            bestInFlight = inFlight;
                        }
                    }
                    // replicas died young: starts wait, and are made one at a time (the calls waiting out the wait
                    // would each start one at its end)
                    long hold = restarts.waitNanos();
                    if (hold > 0) {
                        failuresSeen = startFailures; // it fails only for starts that begin after the wait
                    }
                    if ((best == null || bestInFlight > 0)
                            && alive + starting < scale.max()
                            && hold <= 0
                            && !(restarts.looping() && starting > 0)) {
                        starting++;
                        break; // start one for this call, outside the lock
                    }
                    if (best != null) {
                        best.reserve();
                        return best;
                    }
                    // none serves, and none starts before the call would stop waiting, or the start it waited for
                    // failed
                    if (alive == 0
                            && (hold > 0
                                    ? hold > MAX_WAIT_FOR_RESTART.toNanos() || System.nanoTime() + hold > startDeadline
                                    : starting == 0 || startFailures != failuresSeen)) {
                        throw Status.UNAVAILABLE
                                .withDescription("no replica of revision " + launch.revisionId() + " is ready"
                                        + lastError.map(m -> ": " + m).orElse("") + restarts.reason())
                                .asRuntimeException();
                    }
                    // full: wait for room on a serving replica, for one that is starting, or for the next start
                    long left = (alive == 0 ? startDeadline : roomDeadline) - System.nanoTime();
                    if (left <= 0) {
                        throw alive == 0
                                ? Status.UNAVAILABLE
                                        .withDescription("no replica of revision " + launch.revisionId() + " is ready"
                                                + lastError.map(m -> ": " + m).orElse("") + restarts.reason())
                                        .asRuntimeException()
                                : Status.DEADLINE_EXCEEDED
                                        .withDescription("all " + alive + " replicas of revision "
                                                + launch.revisionId() + " were busy with " + calls.maxConcurrent()
                                                + " calls each"
                                                + " (max_concurrent) until the call's timeout")
                                        .asRuntimeException();
                    }
                    if (hold > 0 && alive + starting < scale.max()) {
                        left = Math.min(left, hold);
                    }
                    try {
                        wait(Math.max(1, left / 1_000_000));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw Status.CANCELLED
                                .withDescription(
                                        "interrupted while waiting for a replica of revision " + launch.revisionId())
                                .asRuntimeException();
                    }
                }
            } finally {
                waiting--;
            }
        }
        try {
            return startCounted(true);
        } catch (WorkerDiedException e) {
            throw Status.UNAVAILABLE
                    .withDescription(
                            "no replica of revision " + launch.revisionId() + " could start: " + e.getMessage())
                    .asRuntimeException();
        }
    }

    private WorkerReplica startCounted() throws WorkerDiedException {
        return startCounted(false);
    }

    /** Starts a replica counted in {@code starting}; {@code reserve} reserves it for the caller's call. */
    private WorkerReplica startCounted(boolean reserve) throws WorkerDiedException {
        String id = "fnw-" + UUID.randomUUID().toString().substring(0, 13);
        synchronized (this) {
            if (closed) { // stopped serving while the start waited out the backoff
                starting--;
                notifyAll();
                throw new WorkerDiedException("revision " + launch.revisionId() + " stopped serving");
            }
        }
        WorkerReplica r;
        long begun = System.nanoTime();
        try {
            r = starter.start(id, launch);
        } catch (WorkerDiedException e) {
            synchronized (this) {
                starting--;
                if (e.refusedForRoom()) { // its environment at its share is no crash of its code
                    restarts.refusedForRoom();
                } else {
                    restarts.died(Duration.ofNanos(System.nanoTime() - begun));
                }
                startFailures++;
                lastError = Optional.of(e.getMessage());
                lastStartFailed = true;
                notifyAll();
            }
            log.warn(
                    "Replica of revision {} failed to start: {}",
                    launch.revisionId(),
                    oneLine(e.getMessage() + reason()));
            fill(); // min_replicas are tried again, once the wait after young deaths is over
            throw e;
        }
        boolean keep;
        synchronized (this) {
            starting--;
            keep = !closed;
            if (keep) {
                replicas.add(r);
                if (reserve) {
                    r.reserve();
                }
                lastError = Optional.empty();
                lastStartFailed = false;
            }
            notifyAll();
        }
        if (!keep) {
            r.close();
            throw new WorkerDiedException(
                    "revision " + launch.revisionId() + " stopped serving while " + id + " started");
        }
        r.onExit().thenRun(() -> {
            if (isMember(r)) { // not when the pool stopped it
                died(r, "worker " + r.id() + " exited; its last output:\n" + r.outputTail());
            }
        });
        log.info("Replica {} of revision {} serving", id, launch.revisionId());
        report();
        return r;
    }

    private synchronized boolean isMember(WorkerReplica r) {
        return replicas.contains(r);
    }

    /**
     * Drops a dead replica, closes it, then starts what the pool lacks: in that order, so that the replacement finds
     * the dead one's place among its environment's sandboxes free (an environment at its share was refused before).
     *
     * @return done once the dead replica is closed
     */
    private CompletableFuture<Void> died(WorkerReplica r, String why) {
        boolean removed;
        String reason = why;
        synchronized (this) {
            removed = replicas.remove(r);
            if (removed) {
                restarts.died(r.age());
                reason = why + restarts.reason();
                lastError = Optional.of(why);
            }
        }
        if (!removed) {
            return r.stopped(); // whoever removed it closes it
        }
        log.warn("Replica {} of revision {} died: {}", r.id(), launch.revisionId(), oneLine(reason));
        // done once the pool has also asked for the replacement: a call's next attempt then waits for it instead
        // of starting a replica of its own beside it
        return CompletableFuture.runAsync(r::close, executor)
                .handle((ignored, failure) -> null)
                .thenRun(this::fill);
    }

    /**
     * A reason as one line of the server's log: it ends with the worker's last output, the tenant's to write, whose
     * lines would otherwise stand in the log as the server's own (a made-up "INFO ... started" line, say).
     */
    static String oneLine(String why) {
        return why == null ? "" : why.replace("\r", "\\r").replace("\n", " \\n ");
    }

    /** Stops replicas above {@code min} idle for longer than the shutdown delay. */
    public void reap(Instant now) {
        List<WorkerReplica> stop = new ArrayList<>();
        synchronized (this) {
            int above = replicas.size() - scale.min();
            for (WorkerReplica r : List.copyOf(replicas)) {
                if (above <= 0) {
                    break;
                }
                if (r.inFlight() == 0
                        && r.idleSince().plus(scale.shutdownDelay()).isBefore(now)) {
                    replicas.remove(r);
                    restarts.stopped(r.age());
                    stop.add(r);
                    above--;
                }
            }
        }
        stop.forEach(r -> {
            log.info(
                    "Replica {} of revision {} idle for {}: stopping",
                    r.id(),
                    launch.revisionId(),
                    scale.shutdownDelay());
            stop(r);
        });
        if (!stop.isEmpty()) {
            report();
        }
    }

    /** The pool's status now. */
    public synchronized PoolStatus status() {
        int ready = (int) replicas.stream().filter(WorkerReplica::alive).count();
        int available = (int)
                replicas.stream().filter(r -> r.alive() && r.inFlight() == 0).count();
        String status;
        if (ready >= Math.max(1, scale.min()) || (scale.min() == 0 && starting == 0 && !lastStartFailed)) {
            status = "ready";
        } else if (lastError.isPresent()) {
            status = ready > 0 ? "degraded" : (starting > 0 && !lastStartFailed ? "degraded" : "failed");
        } else {
            status = "pending";
        }
        return new PoolStatus(status, lastError.map(m -> m + restarts.reason()), ready, available);
    }

    /** How many replicas serve now (for tests and status). */
    public synchronized int size() {
        return replicas.size();
    }

    private void report() {
        report(true);
    }

    /** Reports the status when its state or message differs from the last one reported (not for counts alone). */
    private void reportIfChanged() {
        report(false);
    }

    /** Serialised, so that the last status recorded is the last one computed. */
    private void report(boolean always) {
        synchronized (reporting) {
            PoolStatus now = status();
            if (!always
                    && reported != null
                    && reported.status().equals(now.status())
                    && reported.message().equals(now.message())) {
                return;
            }
            try {
                onStatus.accept(now);
                reported = now;
            } catch (RuntimeException e) {
                reported = null;
                log.warn("Recording the status of revision {} failed: {}", launch.revisionId(), e.toString());
            }
        }
    }

    /** Stops every replica. */
    @Override
    public void close() {
        List<WorkerReplica> all;
        synchronized (this) {
            closed = true;
            all = List.copyOf(replicas);
            replicas.clear();
            notifyAll();
        }
        all.forEach(ReplicaPool::stop);
    }

    /** Closes a replica the pool let go of; one that fails to close does not keep the others from it. */
    private static void stop(WorkerReplica r) {
        try {
            r.close();
        } catch (RuntimeException e) {
            log.warn("Replica {} did not stop cleanly: {}", r.id(), e.toString());
        }
    }
}
