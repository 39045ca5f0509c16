package ai.chalk.compute.server.threads;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The server's timers. A cancelled task stayed in its timer's queue until its delay had passed, and tenants choose
 * many delays (an exec's timeout, a snippet's, up to centuries): each finished exec and snippet of a long timeout left
 * a task in the server's heap for good.
 */
class DaemonThreadsTest {

    @Test
    void aCancelledTaskLeavesItsTimersQueueAtOnce() {
        ScheduledThreadPoolExecutor timer = DaemonThreads.timer("test-timer");
        try {
            List<ScheduledFuture<?>> timeouts = new ArrayList<>();
            for (int i = 0; i < 10_000; i++) {
                timeouts.add(timer.schedule(() -> {}, 365, TimeUnit.DAYS));
            }
            assertThat(timer.getQueue()).hasSize(10_000);
            timeouts.forEach(t -> t.cancel(false));
            assertThat(timer.getQueue()).isEmpty();
            assertThat(timer.getThreadFactory().newThread(() -> {}).isDaemon()).isTrue();
        } finally {
            timer.shutdownNow();
        }
    }
}
