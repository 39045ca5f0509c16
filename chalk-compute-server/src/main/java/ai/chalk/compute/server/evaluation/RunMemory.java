package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.server.exec.ByteBudget;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * What one evaluation run holds in the server's heap until its result file is written: its input rows and its rows'
 * results, estimated as they arrive and reserved on the server-wide budget of evaluation runs. A dataset of millions
 * of rows, or a task answering megabytes a row, fails its run saying so, instead of exhausting the heap that the
 * server shares with every other caller. Released whole when the run ends.
 */
final class RunMemory implements AutoCloseable {

    /** The run would hold more than the budget leaves it: the run fails with this message. */
    static final class ExceededException extends Exception {
        ExceededException(String message) {
            super(message);
        }
    }

    private final ByteBudget budget;
    private final AtomicLong held = new AtomicLong();

    RunMemory(ByteBudget budget) {
        this.budget = budget;
    }

    /** Reserves {@code bytes} more for the run, or says why the run cannot hold them. */
    void hold(long bytes) throws ExceededException {
        if (!budget.tryReserve(bytes)) {
            throw new ExceededException(String.format(
                    Locale.ROOT,
                    "the run needs more of the server's memory than evaluation runs may hold (%s at once, shared by"
                            + " the runs under way; this run held %s and needed %s more for its rows and answers):"
                            + " evaluate fewer rows at a time, have the task answer less per row, or give the server"
                            + " a larger heap",
                    mebibytes(budget.limit()),
                    mebibytes(held.get()),
                    mebibytes(bytes)));
        }
        held.addAndGet(bytes);
    }

    /** The bytes the run holds now. */
    long held() {
        return held.get();
    }

    /** Gives back all the run held. */
    @Override
    public void close() {
        budget.release(held.getAndSet(0));
    }

    /**
     * An estimate of the heap a value read from a row or an answer takes: strings at two bytes a character, boxed
     * scalars, maps and lists with their entries. Estimates, not measures: what matters is that a large value counts
     * as large.
     */
    static long sizeOf(@Nullable Object value) {
        if (value == null) {
            return 8;
        }
        if (value instanceof CharSequence s) {
            return 48 + 2L * s.length();
        }
        if (value instanceof byte[] b) {
            return 24 + b.length;
        }
        if (value instanceof Map<?, ?> m) {
            long size = 64;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                size += 40 + sizeOf(e.getKey()) + sizeOf(e.getValue());
            }
            return size;
        }
        if (value instanceof Collection<?> c) {
            long size = 48;
            for (Object o : c) {
                size += 8 + sizeOf(o);
            }
            return size;
        }
        return 24; // a number, a boolean, a date
    }

    private static String mebibytes(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024.0));
    }
}
