package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.server.exec.ByteBudget;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What the evaluation runs under way hold in the heap together: the server-wide budget, of which the runs of one
 * environment may hold at most half, so that a tenant whose runs fill their share (a large dataset behind a slow task,
 * held for as long as the task takes) holds back only its own runs, not every other environment's, as
 * {@code ReceivedMessages} shares its budget between callers.
 */
final class EvaluationMemory {

    private final ByteBudget budget;
    private final long share;
    /** Bytes held per environment; an environment holding nothing has no entry. */
    private final Map<String, Long> heldByEnvironment = new HashMap<>();

    EvaluationMemory(ByteBudget budget) {
        this.budget = budget;
        this.share = budget.limit() / 2;
    }

    /**
     * Reserves {@code bytes} for a run of {@code environment} if they fit both its environment's share and the
     * budget; otherwise says which does not, for the run's message (null when they fit).
     */
    synchronized @Nullable String tryReserve(String environment, long bytes) {
        if (bytes <= 0) {
            return null;
        }
        long held = heldByEnvironment.getOrDefault(environment, 0L);
        if (held + bytes > share) {
            return String.format(
                    Locale.ROOT,
                    "the runs of one environment may hold %s at once, half of what all evaluation runs share, and"
                            + " this environment's hold %s",
                    RunMemory.mebibytes(share),
                    RunMemory.mebibytes(held));
        }
        if (!budget.tryReserve(bytes)) {
            return String.format(
                    Locale.ROOT,
                    "all evaluation runs may hold %s at once, and the runs under way hold %s",
                    RunMemory.mebibytes(budget.limit()),
                    RunMemory.mebibytes(budget.used()));
        }
        heldByEnvironment.put(environment, held + bytes);
        return null;
    }

    /** Gives back bytes a run of {@code environment} reserved. */
    synchronized void release(String environment, long bytes) {
        if (bytes <= 0) {
            return;
        }
        budget.release(bytes);
        long left = heldByEnvironment.getOrDefault(environment, 0L) - bytes;
        if (left <= 0) {
            heldByEnvironment.remove(environment);
        } else {
            heldByEnvironment.put(environment, left);
        }
    }

    /** The bytes all runs hold now. */
    long used() {
        return budget.used();
    }
}
