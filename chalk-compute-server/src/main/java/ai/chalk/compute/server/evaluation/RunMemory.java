package ai.chalk.compute.server.evaluation;

import java.sql.Array;
import java.sql.Blob;
import java.sql.SQLException;
import java.sql.Struct;
import java.time.temporal.Temporal;
import java.util.Collection;
import java.util.Date;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * What one evaluation run holds in the server's heap until its result file is written: its input rows and its rows'
 * results, estimated as they arrive and reserved on the budget of evaluation runs ({@link EvaluationMemory}: the
 * server's, of which one environment's runs hold at most half). A dataset of millions
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

    private final EvaluationMemory memory;
    private final String environment;
    /** Guarded by this object, as {@link #closed}: a hold that races the close must not outlive it. */
    private long held;

    private boolean closed;

    /** The memory of a run of {@code environment}, reserved on {@code memory}. */
    RunMemory(EvaluationMemory memory, String environment) {
        this.memory = memory;
        this.environment = environment;
    }

    /**
     * Reserves {@code bytes} more for the run, or says why the run cannot hold them. Once the run has ended (its
     * batches still in flight finish after it), nothing is reserved any more: the batch is told the run is over.
     */
    synchronized void hold(long bytes) throws ExceededException {
        if (closed) {
            throw new ExceededException("the run has ended");
        }
        String refused = memory.tryReserve(environment, bytes);
        if (refused != null) {
            throw new ExceededException(String.format(
                    Locale.ROOT,
                    "the run needs more of the server's memory than evaluation runs may hold (%s; this run held %s"
                            + " and needed %s more for its rows and answers): evaluate fewer rows at a time, have the"
                            + " task answer less per row, or give the server a larger heap",
                    refused,
                    mebibytes(held),
                    mebibytes(bytes)));
        }
        held += Math.max(0, bytes);
    }

    /** The bytes the run holds now. */
    synchronized long held() {
        return held;
    }

    /** Gives back all the run held; later holds reserve nothing. */
    @Override
    public synchronized void close() {
        closed = true;
        memory.release(environment, held);
        held = 0;
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
        if (value instanceof Object[] array) {
            long size = 24;
            for (Object o : array) {
                size += 8 + sizeOf(o);
            }
            return size;
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
        if (value instanceof Array array) { // a LIST or ARRAY cell, as DuckDB's JDBC driver gives it
            try {
                return 24 + sizeOf(array.getArray());
            } catch (SQLException e) {
                return 24;
            }
        }
        if (value instanceof Struct struct) {
            try {
                return 24 + sizeOf(struct.getAttributes());
            } catch (SQLException e) {
                return 24;
            }
        }
        if (value instanceof Blob blob) {
            try {
                return 24 + blob.length();
            } catch (SQLException e) {
                return 24;
            }
        }
        if (value instanceof Number
                || value instanceof Boolean
                || value instanceof Temporal
                || value instanceof Date
                || value instanceof UUID) {
            return 24;
        }
        return 48 + 2L * String.valueOf(value).length(); // JSON, a union, whatever else: as large as its text
    }

    /** Bytes as MiB with one decimal, for messages. */
    static String mebibytes(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024.0));
    }
}
