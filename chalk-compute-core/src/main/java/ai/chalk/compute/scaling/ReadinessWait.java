package ai.chalk.compute.scaling;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressGroup;
import io.grpc.Status;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Waits until replicas serve, showing each change in the progress display as the SDK does:
 * <pre>
 * Scaling group "web"
 *   │ › Waiting for readiness
 *   │ › Waiting for replicas 0/2
 *   │ › Waiting for replicas 1/2
 *   └ ✓ Ready (2/2 replicas)
 * </pre>
 * A step is printed only when the count or the server's message changes, so polling does not flood the console; with
 * the display off, the same lines are logged at INFO. Shared by {@link ScalingGroup#awaitReady(Duration)} and a
 * deployed function's {@code awaitReady}; the lines themselves are {@link ReadinessSteps}, which a background
 * deployment that polls on its own schedule shows too.
 */
public final class ReadinessWait {

    /** The first pause between two polls; it doubles up to {@link #MAX_POLL}. */
    private static final Duration FIRST_POLL = Duration.ofMillis(100);

    private static final Duration MAX_POLL = Duration.ofSeconds(1);

    private final ProgressDisplay display;
    private final String heading;

    /**
     * A wait shown under a heading.
     *
     * @param display where the steps show
     * @param heading the group's heading, such as {@code Scaling group "web"}
     */
    public ReadinessWait(ProgressDisplay display, String heading) {
        this.display = Objects.requireNonNull(display, "display");
        this.heading = Objects.requireNonNull(heading, "heading");
    }

    /**
     * Polls until the server reports {@code ready}.
     *
     * @param poll    asks the server for the current readiness
     * @param wanted  how many replicas must serve (the minimum asked for), for the display
     * @param timeout how long to wait
     * @return the readiness that was ready
     * @throws FailedPreconditionException when the server reports {@code failed} (its message says why)
     * @throws ChalkComputeException       {@code DEADLINE_EXCEEDED} when not ready in time, naming the last state
     */
    public Readiness await(Supplier<Readiness> poll, int wanted, Duration timeout) {
        Objects.requireNonNull(poll, "poll");
        Objects.requireNonNull(timeout, "timeout");
        long deadline = System.nanoTime() + timeout.toNanos();
        Duration pause = FIRST_POLL;
        try (ProgressGroup group = display.open(heading)) {
            ReadinessSteps steps = new ReadinessSteps(group, wanted);
            steps.begin();
            while (true) {
                Readiness r = poll.get();
                if (steps.show(r)) {
                    if (ReadinessSteps.isFailed(r)) {
                        throw new FailedPreconditionException(heading + " failed: " + ReadinessSteps.failure(r));
                    }
                    return r;
                }
                if (System.nanoTime() - deadline >= 0) {
                    steps.timedOut(timeout);
                    throw new ChalkComputeException(
                            Status.Code.DEADLINE_EXCEEDED,
                            heading + " was not ready within " + timeout + "; last: " + r);
                }
                sleep(pause);
                pause = pause.multipliedBy(2).compareTo(MAX_POLL) > 0 ? MAX_POLL : pause.multipliedBy(2);
            }
        }
    }

    private void sleep(Duration pause) {
        try {
            Thread.sleep(pause.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ChalkComputeException(Status.Code.CANCELLED, "interrupted waiting for " + heading);
        }
    }
}
