package ai.chalk.compute.server.threads;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Factories of daemon threads named after their job. Every executor the server owns makes its threads here: a thread
 * the server starts must never keep the JVM running after its owner closed the server (an embedding application's
 * {@code main} returning, a test ending).
 */
public final class DaemonThreads {

    private DaemonThreads() {}

    /** Daemon threads named {@code prefix-1}, {@code prefix-2}, ... for pools. */
    public static ThreadFactory numbered(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return r -> daemon(r, prefix + "-" + count.incrementAndGet());
    }

    /** Daemon threads all named {@code name}, for single-thread executors. */
    public static ThreadFactory named(String name) {
        return r -> daemon(r, name);
    }

    /**
     * A timer: one daemon thread named {@code name} running scheduled tasks, where a task cancelled leaves the queue at
     * once. A cancelled task otherwise stays queued, with all it holds, until its delay has passed, and tenants choose
     * many delays (an exec's timeout, a snippet's, up to centuries): every finished exec and snippet stayed in the
     * server's heap, its source, request and call included.
     */
    public static ScheduledThreadPoolExecutor timer(String name) {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, named(name));
        timer.setRemoveOnCancelPolicy(true);
        return timer;
    }

    /** Starts {@code work} on a daemon thread of its own named {@code name}. */
    public static Thread start(String name, Runnable work) {
        Thread t = daemon(work, name);
        t.start();
        return t;
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
