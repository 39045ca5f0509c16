package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.server.exec.ByteBudget;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * What the evaluation runs under way hold in the heap together: the server-wide budget, of which the runs of one
 * environment may hold at most half ({@link EnvironmentBytes}), so that a tenant whose runs fill their share (a large
 * dataset behind a slow task, held for as long as the task takes) holds back only its own runs, not every other
 * environment's.
 */
final class EvaluationMemory {

    private final EnvironmentBytes bytes;

    EvaluationMemory(ByteBudget budget) {
        this.bytes = new EnvironmentBytes(budget);
    }

    /**
     * Reserves {@code bytes} for a run of {@code environment} if they fit both its environment's share and the
     * budget; otherwise says which does not, for the run's message (null when they fit).
     */
    @Nullable
    String tryReserve(String environment, long bytes) {
        EnvironmentBytes.Refusal refusal = this.bytes.tryReserve(environment, bytes);
        if (refusal == EnvironmentBytes.Refusal.ENVIRONMENT_SHARE) {
            return String.format(
                    Locale.ROOT,
                    "the runs of one environment may hold %s at once, half of what all evaluation runs share, and"
                            + " this environment's hold %s",
                    RunMemory.mebibytes(this.bytes.share()),
                    RunMemory.mebibytes(this.bytes.held(environment)));
        }
        if (refusal == EnvironmentBytes.Refusal.BUDGET) {
            ByteBudget budget = this.bytes.budget();
            return String.format(
                    Locale.ROOT,
                    "all evaluation runs may hold %s at once, and the runs under way hold %s",
                    RunMemory.mebibytes(budget.limit()),
                    RunMemory.mebibytes(budget.used()));
        }
        return null;
    }

    /** Gives back bytes a run of {@code environment} reserved. */
    void release(String environment, long bytes) {
        this.bytes.release(environment, bytes);
    }

    /** The bytes all runs hold now. */
    long used() {
        return bytes.budget().used();
    }
}
