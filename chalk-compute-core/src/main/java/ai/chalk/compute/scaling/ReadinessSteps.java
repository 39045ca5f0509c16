package ai.chalk.compute.scaling;

import ai.chalk.compute.progress.ProgressGroup;
import java.time.Duration;
import java.util.Objects;

/**
 * The readiness steps of one progress group, one server answer at a time: what {@link ReadinessWait} shows while it
 * polls, for a caller that polls on its own schedule (a background deployment that must not hold a thread while
 * replicas start) and wants the same lines:
 * <pre>
 *   │ › Waiting for readiness
 *   │ › Waiting for replicas 0/2
 *   │ › Waiting for replicas 1/2 — waiting for startup probe
 *   └ ✓ Ready (2/2 replicas)
 * </pre>
 * A step is printed only when it differs from the group's previous line, so a caller may report every poll. The
 * group is closed with {@code Ready (...)} or with the server's reason for a failure; it is not closed otherwise.
 */
public final class ReadinessSteps {

    private final ProgressGroup group;
    private final int wanted;

    /**
     * Steps shown in a group.
     *
     * @param group  the group the steps go to, such as {@code Function "fraud"}
     * @param wanted how many replicas must serve (the minimum asked for), for the {@code 1/2} count
     */
    public ReadinessSteps(ProgressGroup group, int wanted) {
        this.group = Objects.requireNonNull(group, "group");
        this.wanted = wanted;
    }

    /** Shows that the wait began: {@code │ › Waiting for readiness}. */
    public void begin() {
        group.step("Waiting for readiness");
    }

    /**
     * Shows one server answer: a {@code Waiting for replicas} step, or the group's closing line when the replicas
     * serve ({@code └ ✓ Ready (2/2 replicas)}) or cannot start ({@code └ ✗} and the server's reason).
     *
     * @param readiness the server's answer
     * @return {@code true} when the answer ended the wait (ready or failed) and the group is closed
     */
    public boolean show(Readiness readiness) {
        Objects.requireNonNull(readiness, "readiness");
        if (isReady(readiness)) {
            group.succeed("Ready (" + readiness.readyReplicas() + "/" + Math.max(wanted, readiness.readyReplicas())
                    + " replicas)");
            return true;
        }
        if (isFailed(readiness)) {
            group.fail(failure(readiness));
            return true;
        }
        group.step(line(readiness, wanted));
        return false;
    }

    /**
     * Closes the group because the replicas did not serve in time: {@code └ ✗ Not ready within PT10M}.
     *
     * @param timeout how long was waited
     */
    public void timedOut(Duration timeout) {
        group.fail("Not ready within " + timeout);
    }

    /** Whether the server says the replicas serve. */
    static boolean isReady(Readiness readiness) {
        return "ready".equalsIgnoreCase(readiness.status());
    }

    /** Whether the server says the replicas cannot start. */
    static boolean isFailed(Readiness readiness) {
        return "failed".equalsIgnoreCase(readiness.status());
    }

    /** Why the replicas cannot start: the server's message, or a generic reason when it gave none. */
    static String failure(Readiness readiness) {
        return readiness.message().isEmpty() ? "its replicas could not start" : readiness.message();
    }

    /** {@code Waiting for replicas 1/2}, with the server's message when it has one. */
    static String line(Readiness readiness, int wanted) {
        return "Waiting for replicas " + readiness.readyReplicas() + "/" + wanted
                + (readiness.message().isEmpty() ? "" : " — " + readiness.message());
    }
}
