package ai.chalk.compute.scaling;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressSettings;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The readiness steps of the progress display, from a sequence of server answers. */
class ReadinessWaitTest {

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final ProgressDisplay display = ProgressDisplay.of(
            ProgressSettings.fromEnv(Map.of("TERM", "dumb")).withTerminal(false), new PrintStream(bytes, true, UTF_8));

    private static Readiness readiness(String status, String message, int ready) {
        return new Readiness("rev-1", status, message, ready, ready);
    }

    @Test
    void eachChangeOfTheReplicaCountIsOneStepAndRepeatedPollsPrintNothing() {
        Iterator<Readiness> answers = List.of(
                        readiness("pending", "", 0),
                        readiness("pending", "", 0),
                        readiness("pending", "", 1),
                        readiness("pending", "waiting for startup probe", 1),
                        readiness("ready", "", 2))
                .iterator();

        Readiness ready =
                new ReadinessWait(display, "Scaling group \"web\"").await(answers::next, 2, Duration.ofSeconds(30));

        assertThat(ready.readyReplicas()).isEqualTo(2);
        assertThat(bytes.toString(UTF_8))
                .isEqualTo("Scaling group \"web\"\n"
                        + "  │ › Waiting for readiness\n"
                        + "  │ › Waiting for replicas 0/2\n"
                        + "  │ › Waiting for replicas 1/2\n"
                        + "  │ › Waiting for replicas 1/2 — waiting for startup probe\n"
                        + "  └ ✓ Ready (2/2 replicas)\n");
    }

    @Test
    void replicasThatCannotStartFailTheWaitWithTheServersReason() {
        Iterator<Readiness> answers = List.of(
                        readiness("pending", "", 0), readiness("failed", "image nope:1 not found", 0))
                .iterator();

        assertThatThrownBy(() -> new ReadinessWait(display, "Function \"fraud\"")
                        .await(answers::next, 1, Duration.ofSeconds(30)))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("image nope:1 not found");
        assertThat(bytes.toString(UTF_8)).endsWith("  └ ✗ image nope:1 not found\n");
    }

    @Test
    void aWaitThatRunsOutSaysSoWithTheLastState() {
        assertThatThrownBy(() -> new ReadinessWait(display, "Scaling group \"slow\"")
                        .await(() -> readiness("pending", "", 0), 1, Duration.ofMillis(300)))
                .isInstanceOfSatisfying(
                        ChalkComputeException.class,
                        e -> assertThat(e.statusCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED))
                .hasMessageContaining("was not ready within")
                .hasMessageContaining("pending (0 ready");
        assertThat(bytes.toString(UTF_8))
                .contains("  │ › Waiting for replicas 0/1\n")
                .endsWith("  └ ✗ Not ready within PT0.3S\n");
    }

    @Test
    void stepsShownOneAnswerAtATimeAreTheLinesOfAWait() {
        ai.chalk.compute.progress.ProgressGroup group = display.open("Function \"fraud\"");
        ReadinessSteps steps = new ReadinessSteps(group, 2);
        steps.begin();

        assertThat(steps.show(readiness("pending", "", 0))).isFalse();
        assertThat(steps.show(readiness("pending", "", 0))).isFalse();
        assertThat(steps.show(readiness("pending", "", 1))).isFalse();
        assertThat(steps.show(readiness("ready", "", 2))).isTrue();

        assertThat(group.isFinished()).isTrue();
        assertThat(bytes.toString(UTF_8))
                .isEqualTo("Function \"fraud\"\n"
                        + "  │ › Waiting for readiness\n"
                        + "  │ › Waiting for replicas 0/2\n"
                        + "  │ › Waiting for replicas 1/2\n"
                        + "  └ ✓ Ready (2/2 replicas)\n");
    }
}
