package ai.chalk.compute.sql;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A SQL query running in the background ({@link SQLClient#submit}) or found again by its id
 * ({@link SQLClient#getJob}). Its result is persisted on the server.
 *
 * <pre>{@code
 * SqlJob job = sql.submit("SELECT * FROM chalk.datasets.support_examples", "batch");
 * String id = job.queryId(); // save it to resume with sql.getJob(id)
 * SqlResult result = job.await(Duration.ofMinutes(10));
 * }</pre>
 */
public final class SqlJob {

    private static final Duration FIRST_POLL = Duration.ofMillis(50);
    private static final Duration MAX_POLL = Duration.ofSeconds(2);

    private final SQLClient client;
    private final String queryId;
    private volatile SqlJobStatus status;
    private volatile Optional<SqlResult> result;
    private volatile Optional<String> error;

    SqlJob(SQLClient client, String queryId, SqlJobStatus status, Optional<SqlResult> result, Optional<String> error) {
        this.client = client;
        this.queryId = queryId;
        this.status = status;
        this.result = result;
        this.error = error;
    }

    /** The query's id: save it to resume with {@link SQLClient#getJob}. */
    public String queryId() {
        return queryId;
    }

    /** The status as last seen ({@link #refresh} asks the server again). */
    public SqlJobStatus status() {
        return status;
    }

    /** The result, once the job {@linkplain SqlJobStatus#SUCCEEDED succeeded} (as last seen). */
    public Optional<SqlResult> result() {
        return result;
    }

    /** Why the job failed, once it {@linkplain SqlJobStatus#FAILED failed} (as last seen). */
    public Optional<String> error() {
        return error;
    }

    /** Asks the server where the job is; returns this job with its status updated. */
    public SqlJob refresh() {
        SqlJob now = client.getJob(queryId);
        this.status = now.status;
        this.result = now.result;
        this.error = now.error;
        return this;
    }

    /**
     * Waits for the job to end, polling the server.
     *
     * @param timeout the longest to wait
     * @return its result
     * @throws SqlException            when the job failed (refused, failed, canceled), with the server's message
     * @throws SqlJobTimeoutException  when it is still running after {@code timeout}; it goes on running
     */
    public SqlResult await(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        long deadline = System.nanoTime() + timeout.toNanos();
        Duration pause = FIRST_POLL;
        while (true) {
            if (status == SqlJobStatus.SUCCEEDED) {
                return result.orElseThrow();
            }
            if (status == SqlJobStatus.FAILED) {
                throw new SqlException(queryId, error.orElse("no reason given"));
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new SqlJobTimeoutException(queryId, timeout);
            }
            try {
                Thread.sleep(Math.min(pause.toMillis(), Math.max(1, left / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SqlJobTimeoutException(queryId, timeout);
            }
            pause = pause.multipliedBy(2).compareTo(MAX_POLL) > 0 ? MAX_POLL : pause.multipliedBy(2);
            refresh();
        }
    }

    @Override
    public String toString() {
        return "SqlJob[" + queryId + ", " + status + "]";
    }
}
