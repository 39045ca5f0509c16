package ai.chalk.compute.server.runtime.host;

import java.util.List;
import java.util.concurrent.locks.LockSupport;

/** Waiting, with a growing pause, for host processes to end. */
public final class ProcessWait {

    private ProcessWait() {}

    /** Returns when none of {@code pids} runs any more, or at {@code deadlineNanos} ({@link System#nanoTime()}). */
    public static void untilGone(List<Long> pids, long deadlineNanos) {
        long pause = 200_000;
        while (System.nanoTime() < deadlineNanos && pids.stream().anyMatch(Procfs::running)) {
            LockSupport.parkNanos(Math.min(pause, Math.max(0, deadlineNanos - System.nanoTime())));
            pause = Math.min(pause * 2, 10_000_000);
        }
    }
}
