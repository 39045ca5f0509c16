package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.threads.DaemonThreads;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The async queries' slots, shared fairly: at most {@code slots} run at once, one environment's at most half of them
 * (at least one), and a freed slot goes to the environment that waited longest since it last had one. First come,
 * first served, one environment's queries held every slot for as long as they ran, and every other environment's
 * waited behind all of its queued ones.
 */
final class FairJobs {

    private final int slots;
    private final int perEnvironment;
    private final ExecutorService threads;
    /** Each environment's waiting jobs, in the order environments get the next free slot (guarded by this). */
    private final Map<String, Deque<Runnable>> waiting = new LinkedHashMap<>();
    /** Jobs running per environment (guarded by this). */
    private final Map<String, Integer> running = new HashMap<>();

    private int runningTotal; // guarded by this

    FairJobs(int slots) {
        this.slots = slots;
        this.perEnvironment = Math.max(1, slots / 2);
        this.threads = Executors.newFixedThreadPool(slots, DaemonThreads.numbered("chalk-sql"));
    }

    /** Runs {@code job} for {@code environment} once a slot is its. */
    void submit(String environment, Runnable job) {
        synchronized (this) {
            waiting.computeIfAbsent(environment, e -> new ArrayDeque<>()).add(job);
        }
        dispatch();
    }

    private void dispatch() {
        List<Runnable> start = new ArrayList<>();
        synchronized (this) {
            while (runningTotal < slots) {
                String next = null;
                for (Iterator<Map.Entry<String, Deque<Runnable>>> it =
                                waiting.entrySet().iterator();
                        it.hasNext(); ) {
                    Map.Entry<String, Deque<Runnable>> e = it.next();
                    if (running.getOrDefault(e.getKey(), 0) < perEnvironment) {
                        next = e.getKey();
                        break;
                    }
                }
                if (next == null) {
                    break;
                }
                Deque<Runnable> queue = waiting.remove(next);
                Runnable job = queue.poll();
                if (!queue.isEmpty()) {
                    waiting.put(next, queue); // to the back of the line
                }
                running.merge(next, 1, Integer::sum);
                runningTotal++;
                String environment = next;
                start.add(() -> {
                    try {
                        job.run();
                    } finally {
                        finished(environment);
                    }
                });
            }
        }
        start.forEach(threads::execute);
    }

    private void finished(String environment) {
        synchronized (this) {
            running.merge(environment, -1, (a, b) -> a + b == 0 ? null : a + b);
            runningTotal--;
        }
        dispatch();
    }

    /** Stops the running jobs' threads (interrupting them) and drops the waiting ones. */
    void shutdownNow() {
        synchronized (this) {
            waiting.clear();
        }
        threads.shutdownNow();
    }

    boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return threads.awaitTermination(timeout, unit);
    }
}
