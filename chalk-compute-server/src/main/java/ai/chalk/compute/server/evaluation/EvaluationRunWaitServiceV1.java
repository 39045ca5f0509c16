package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.proto.evaluation.v1.EvaluationRunStatus;
import ai.chalk.compute.proto.evaluation.v1.EvaluationRunWaitServiceGrpc;
import ai.chalk.compute.proto.evaluation.v1.WaitEvaluationRunRequest;
import ai.chalk.compute.proto.evaluation.v1.WaitEvaluationRunResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.EvaluationRunStore;
import ai.chalk.compute.server.store.EvaluationRunStore.RunRecord;
import ai.chalk.compute.server.threads.DaemonThreads;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * {@code chalk_compute.evaluation.v1.EvaluationRunWaitService}: a wait for a run of the caller's environment is
 * answered as soon as the run store records another status for it ({@link EvaluationRunStore#onStatusChange}), or
 * when the wait has passed, with the run and its summary or progress as {@code ListEvaluationRuns} gives them. No
 * thread is held while a wait is open: a waiter is a record in a map, and one scheduler thread answers.
 */
public final class EvaluationRunWaitServiceV1 extends EvaluationRunWaitServiceGrpc.EvaluationRunWaitServiceImplBase {

    /** The longest wait the server keeps open: a client that wants longer asks again. */
    static final Duration MAX_WAIT = Duration.ofSeconds(60);

    private final EvaluationRunStore runStore;
    private final EvaluationServiceV1 service;
    private final ScheduledExecutorService answers = DaemonThreads.timer("chalk-compute-evaluation-waits");
    private final Map<String, Set<Waiter>> waiting = new ConcurrentHashMap<>();

    EvaluationRunWaitServiceV1(EvaluationRunStore runStore, EvaluationServiceV1 service) {
        this.runStore = runStore;
        this.service = service;
        runStore.onStatusChange(this::changed);
    }

    /** The server is stopping: open waits end with their calls, the scheduler thread goes. */
    void stop() {
        answers.shutdownNow();
    }

    @Override
    public void waitEvaluationRun(
            WaitEvaluationRunRequest request, StreamObserver<WaitEvaluationRunResponse> observer) {
        String environment;
        RunRecord first;
        try {
            environment = Caller.current().environment();
            first = service.findRun(request.getEvaluationRunId());
        } catch (RuntimeException e) {
            observer.onError(StatusErrors.toStatus(e).asRuntimeException());
            return;
        }
        long waitNanos = request.hasTimeout()
                ? Math.min(
                        MAX_WAIT.toNanos(),
                        Math.max(
                                0,
                                Duration.ofSeconds(
                                                request.getTimeout().getSeconds(),
                                                request.getTimeout().getNanos())
                                        .toNanos()))
                : 0;
        EvaluationRunStatus seen = request.getStatus();
        Waiter w = new Waiter(environment, first.id(), observer);
        if (waitNanos == 0 || seen == EvaluationRunStatus.EVALUATION_RUN_STATUS_UNSPECIFIED || moved(first, seen)) {
            w.answer(first);
            return;
        }
        waiting.computeIfAbsent(first.id(), k -> ConcurrentHashMap.newKeySet()).add(w);
        if (observer instanceof ServerCallStreamObserver<WaitEvaluationRunResponse> call) {
            call.setOnCancelHandler(w::drop);
        }
        try {
            w.timeout = answers.schedule((Runnable) w::answer, waitNanos, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            w.answer(); // stopping: answer with the run as it stands
            return;
        }
        // the status may have changed between the first read and the waiter's registration
        if (runStore.run(environment, first.id()).map(r -> moved(r, seen)).orElse(true)) {
            changed(first.id());
        }
    }

    private static boolean moved(RunRecord r, EvaluationRunStatus seen) {
        return EvaluationServiceV1.status(r) != seen;
    }

    /** A run's status changed: its waiters are answered on the scheduler thread, not the one that changed it. */
    private void changed(String runId) {
        Set<Waiter> ws = waiting.get(runId);
        if (ws == null) {
            return;
        }
        for (Waiter w : ws) {
            try {
                answers.execute((Runnable) w::answer);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                w.answer();
            }
        }
    }

    /** One open wait: answered exactly once, by a change, its time running out, or dropped when the caller goes. */
    private final class Waiter {
        private final String environment;
        private final String runId;
        private final StreamObserver<WaitEvaluationRunResponse> observer;
        private final AtomicBoolean done = new AtomicBoolean();
        volatile @Nullable ScheduledFuture<?> timeout;

        Waiter(String environment, String runId, StreamObserver<WaitEvaluationRunResponse> observer) {
            this.environment = environment;
            this.runId = runId;
            this.observer = observer;
        }

        /** Answers with the run as it stands now. */
        void answer() {
            if (done.get()) {
                return;
            }
            RunRecord r;
            try {
                r = runStore.run(environment, runId)
                        .orElseThrow(() -> new IllegalStateException("run " + runId + " is gone from the store"));
            } catch (RuntimeException e) {
                if (finish()) {
                    observer.onError(StatusErrors.toStatus(e).asRuntimeException());
                }
                return;
            }
            answer(r);
        }

        void answer(RunRecord r) {
            if (!finish()) {
                return;
            }
            try {
                WaitEvaluationRunResponse.Builder b =
                        WaitEvaluationRunResponse.newBuilder().setEvaluationRun(EvaluationServiceV1.run(r));
                service.summaryOrProgress(r).ifPresent(b::setScoreSummary);
                observer.onNext(b.build());
                observer.onCompleted();
            } catch (StatusRuntimeException e) {
                // the caller went away meanwhile: nothing to tell
            } catch (RuntimeException e) {
                try {
                    observer.onError(StatusErrors.toStatus(e).asRuntimeException());
                } catch (RuntimeException ignored) {
                    // the call is closed already
                }
            }
        }

        /** The caller canceled: forget the wait. */
        void drop() {
            finish();
        }

        private boolean finish() {
            if (!done.compareAndSet(false, true)) {
                return false;
            }
            waiting.computeIfPresent(runId, (k, set) -> {
                set.remove(this);
                return set.isEmpty() ? null : set;
            });
            ScheduledFuture<?> t = timeout;
            if (t != null) {
                t.cancel(false);
            }
            return true;
        }
    }
}
