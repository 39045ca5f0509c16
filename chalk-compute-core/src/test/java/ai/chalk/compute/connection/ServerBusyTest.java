package ai.chalk.compute.connection;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A transfer the server is too busy for is tried again after the wait it asks for, a few times only. */
class ServerBusyTest {

    @Test
    void aBusyAnswerWaitsItsRetryAfterAndOnlyAFewTimes() throws Exception {
        long t0 = System.nanoTime();
        assertThat(ServerBusy.waited(503, Optional.of("1"), 1)).isTrue();
        assertThat((System.nanoTime() - t0) / 1_000_000).as("waited ms").isGreaterThanOrEqualTo(1_000);
        assertThat(ServerBusy.waited(503, Optional.of("a date"), ServerBusy.TRIES))
                .as("the last try's refusal is the answer")
                .isFalse();
        t0 = System.nanoTime();
        assertThat(ServerBusy.waited(200, Optional.empty(), 1)).isFalse();
        assertThat(ServerBusy.waited(403, Optional.of("5"), 1)).isFalse();
        assertThat((System.nanoTime() - t0) / 1_000_000)
                .as("no wait for other answers")
                .isLessThan(500);
    }
}
