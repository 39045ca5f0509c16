package ai.chalk.compute.server.python;

import ai.chalk.compute.server.exec.ProcessThreads;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One snippet on its way through an interpreter: what the call asked, where its events go, and how it is stopped.
 * A stop (the client's interrupt, its timeout, the client going away) is a SIGINT to the interpreter, which raises
 * KeyboardInterrupt in the snippet and keeps its state; a snippet still running {@link #GRACE} later (it caught the
 * exception, ignores the signal, or is stuck in native code) has its interpreter killed.
 */
final class PythonExecution {

    /** How long a snippet has to stop after the SIGINT before its interpreter is killed. */
    static final Duration GRACE = Duration.ofSeconds(3);

    /** Why an execution was stopped. */
    enum Stop {
        NONE,
        INTERRUPT,
        TIMEOUT
    }

    private final String id;
    private final PythonRequest request;
    private final PythonCall call;
    private final ProcessThreads threads;
    private volatile Stop stop = Stop.NONE;
    private volatile boolean killed;
    private volatile boolean finished;
    private @Nullable PythonDriver driver;
    private @Nullable ScheduledFuture<?> timer;

    PythonExecution(String id, PythonRequest request, PythonCall call, ProcessThreads threads) {
        this.id = id;
        this.request = request;
        this.call = call;
        this.threads = threads;
    }

    String id() {
        return id;
    }

    PythonRequest request() {
        return request;
    }

    PythonCall call() {
        return call;
    }

    /** Why it was stopped ({@link Stop#NONE} when it was not). */
    Stop stopped() {
        return stop;
    }

    /** Whether its interpreter was killed because the snippet did not stop in time. */
    boolean killed() {
        return killed;
    }

    /** The snippet now runs in {@code running}: its timeout starts, and a stop asked for already is delivered. */
    synchronized void running(PythonDriver running) {
        driver = running;
        request.timeout()
                .ifPresent(t -> timer =
                        threads.timers().schedule(() -> stop(Stop.TIMEOUT), t.toMillis(), TimeUnit.MILLISECONDS));
        if (stop != Stop.NONE) {
            deliver(running);
        }
    }

    /** Stops the snippet; the first reason wins. */
    synchronized void stop(Stop why) {
        if (stop != Stop.NONE || finished) {
            return;
        }
        stop = why;
        PythonDriver d = driver;
        if (d != null) {
            deliver(d);
        }
    }

    private void deliver(PythonDriver d) {
        d.interrupt();
        threads.timers().schedule(() -> escalate(d), GRACE.toMillis(), TimeUnit.MILLISECONDS);
    }

    private synchronized void escalate(PythonDriver d) {
        if (!finished) {
            killed = true;
            d.kill();
        }
    }

    /** The snippet is over: no more stops reach its interpreter. */
    synchronized void finished() {
        finished = true;
        ScheduledFuture<?> t = timer;
        if (t != null) {
            t.cancel(false);
        }
    }
}
