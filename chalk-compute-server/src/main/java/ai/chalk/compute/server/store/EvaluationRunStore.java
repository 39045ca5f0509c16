package ai.chalk.compute.server.store;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Evaluation runs in the embedded database. A run moves PENDING → RUNNING → FINALIZING → SUCCEEDED / FAILED /
 * CANCELED, each step only from the one before (or to a terminal state from any open one), so a late writer never
 * revives a finished run. The server executes runs in its own process: {@link #recover} fails the runs a restart
 * interrupted, saying so, rather than leaving them open forever.
 */
public final class EvaluationRunStore {

    /** A run's status, as the contract names them. */
    public enum RunStatus {
        PENDING,
        RUNNING,
        FINALIZING,
        SUCCEEDED,
        FAILED,
        CANCELED;

        /** Whether the run has ended. */
        public boolean terminal() {
            return this == SUCCEEDED || this == FAILED || this == CANCELED;
        }
    }

    /** What an interrupted run's error says. */
    public static final String INTERRUPTED = "the server restarted while this run was in progress, and runs do not"
            + " resume across a restart; start a new run of the evaluation";

    /**
     * A run as recorded.
     *
     * @param metadata the serialized metadata, as the service wrote it
     * @param summary  the serialized score summary once the run has one
     */
    public record RunRecord(
            long seq,
            String id,
            String environment,
            String evaluationId,
            RunStatus status,
            byte[] metadata,
            Instant createdAt,
            @Nullable Instant startedAt,
            @Nullable Instant completedAt,
            @Nullable String resultDatasetId,
            @Nullable String resultRevisionId,
            @Nullable String errorMessage,
            boolean baseline,
            @Nullable Instant archivedAt,
            byte @Nullable [] summary) {}

    private final Database db;
    private final List<Consumer<String>> statusListeners = new CopyOnWriteArrayList<>();

    public EvaluationRunStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS evaluation_run (
                  seq BIGINT AUTO_INCREMENT,
                  id VARCHAR(64) PRIMARY KEY,
                  environment VARCHAR(64) NOT NULL,
                  evaluation_id VARCHAR(64) NOT NULL,
                  status VARCHAR(16) NOT NULL,
                  metadata VARBINARY NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  started_at TIMESTAMP WITH TIME ZONE,
                  completed_at TIMESTAMP WITH TIME ZONE,
                  result_dataset_id VARCHAR(64),
                  result_revision_id VARCHAR(64),
                  error_message CLOB,
                  is_baseline BOOLEAN NOT NULL DEFAULT FALSE,
                  archived_at TIMESTAMP WITH TIME ZONE,
                  summary VARBINARY)""");
    }

    /**
     * Calls {@code listener} with a run's id each time this store changes its status (once the change is stored), on
     * the thread that changed it: those waiting for a run to move on learn it at once instead of polling. The listener
     * must not block.
     */
    public void onStatusChange(Consumer<String> listener) {
        statusListeners.add(listener);
    }

    private boolean changed(boolean updated, String id) {
        if (updated) {
            statusListeners.forEach(l -> l.accept(id));
        }
        return updated;
    }

    /** Fails every run a previous server left open; returns how many, for the start log. */
    public int recover(Instant at) {
        return SqlQuery.updateCount(
                db,
                "UPDATE evaluation_run SET status = 'FAILED', error_message = ?, completed_at = ?"
                        + " WHERE status IN ('PENDING', 'RUNNING', 'FINALIZING')",
                ps -> {
                    ps.setString(1, INTERRUPTED);
                    ps.setTimestamp(2, Timestamp.from(at));
                },
                "failing interrupted evaluation runs");
    }

    /** Records a PENDING run. */
    public RunRecord insert(String environment, String id, String evaluationId, byte[] metadata, Instant at) {
        SqlQuery.update(
                db,
                "INSERT INTO evaluation_run (id, environment, evaluation_id, status, metadata, created_at)"
                        + " VALUES (?, ?, ?, 'PENDING', ?, ?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, environment);
                    ps.setString(3, evaluationId);
                    ps.setBytes(4, metadata);
                    ps.setTimestamp(5, Timestamp.from(at));
                },
                "saving evaluation run " + id);
        return run(environment, id).orElseThrow();
    }

    /** PENDING → RUNNING; false when the run was no longer PENDING (canceled, say). */
    public boolean start(String id, Instant at) {
        return changed(
                SqlQuery.updateCount(
                                db,
                                "UPDATE evaluation_run SET status = 'RUNNING', started_at = ? WHERE id = ? AND status = 'PENDING'",
                                ps -> {
                                    ps.setTimestamp(1, Timestamp.from(at));
                                    ps.setString(2, id);
                                },
                                "starting evaluation run " + id)
                        == 1,
                id);
    }

    /** RUNNING → FINALIZING: the rows are scored and the result is being written. */
    public boolean finalizing(String id) {
        return changed(
                SqlQuery.updateCount(
                                db,
                                "UPDATE evaluation_run SET status = 'FINALIZING' WHERE id = ? AND status = 'RUNNING'",
                                ps -> ps.setString(1, id),
                                "finalizing evaluation run " + id)
                        == 1,
                id);
    }

    /** A FINALIZING run ends as SUCCEEDED with its result and summary; false when it was not FINALIZING. */
    public boolean succeed(String id, String resultDatasetId, String resultRevisionId, byte[] summary, Instant at) {
        return changed(
                SqlQuery.updateCount(
                                db,
                                "UPDATE evaluation_run SET status = 'SUCCEEDED', result_dataset_id = ?, result_revision_id = ?,"
                                        + " summary = ?, completed_at = ? WHERE id = ? AND status = 'FINALIZING'",
                                ps -> {
                                    ps.setString(1, resultDatasetId);
                                    ps.setString(2, resultRevisionId);
                                    ps.setBytes(3, summary);
                                    ps.setTimestamp(4, Timestamp.from(at));
                                    ps.setString(5, id);
                                },
                                "completing evaluation run " + id)
                        == 1,
                id);
    }

    /** An open run ends as FAILED or CANCELED with why; false when it had ended already. */
    public boolean end(String id, RunStatus status, String message, Instant at) {
        if (!status.terminal() || status == RunStatus.SUCCEEDED) {
            throw new IllegalArgumentException("a run ends with end() as FAILED or CANCELED, not " + status);
        }
        return changed(
                SqlQuery.updateCount(
                                db,
                                "UPDATE evaluation_run SET status = ?, error_message = ?, completed_at = ?"
                                        + " WHERE id = ? AND status IN ('PENDING', 'RUNNING', 'FINALIZING')",
                                ps -> {
                                    ps.setString(1, status.name());
                                    ps.setString(2, SqlQuery.fit(message));
                                    ps.setTimestamp(3, Timestamp.from(at));
                                    ps.setString(4, id);
                                },
                                "ending evaluation run " + id)
                        == 1,
                id);
    }

    /** Makes the run its evaluation's one baseline (unmarking the previous one); false when it is not found. */
    public boolean setBaseline(String environment, String id) {
        Optional<RunRecord> run = run(environment, id);
        if (run.isEmpty()) {
            return false;
        }
        SqlQuery.update(
                db,
                "UPDATE evaluation_run SET is_baseline = (id = ?) WHERE environment = ? AND evaluation_id = ?",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, environment);
                    ps.setString(3, run.get().evaluationId());
                },
                "setting the baseline run " + id);
        return true;
    }

    /** Archives the run: lists leave it out; false when it is not found. */
    public boolean archive(String environment, String id, Instant at) {
        return SqlQuery.updateCount(
                        db,
                        "UPDATE evaluation_run SET archived_at = COALESCE(archived_at, ?) WHERE environment = ? AND id = ?",
                        ps -> {
                            ps.setTimestamp(1, Timestamp.from(at));
                            ps.setString(2, environment);
                            ps.setString(3, id);
                        },
                        "archiving evaluation run " + id)
                == 1;
    }

    /** The environment's run with this id, archived or not. */
    public Optional<RunRecord> run(String environment, String id) {
        return runs("SELECT * FROM evaluation_run WHERE environment = ? AND id = ?", List.of(environment, id)).stream()
                .findFirst();
    }

    /**
     * The environment's unarchived runs after {@code afterSeq} in creation order, at most {@code limit}, only those of
     * {@code evaluationId} when given.
     */
    public List<RunRecord> runs(String environment, @Nullable String evaluationId, long afterSeq, int limit) {
        List<Object> args = new ArrayList<>(List.of(environment, afterSeq));
        String sql = "SELECT * FROM evaluation_run WHERE environment = ? AND seq > ? AND archived_at IS NULL";
        if (evaluationId != null) {
            sql += " AND evaluation_id = ?";
            args.add(evaluationId);
        }
        args.add(limit);
        return runs(sql + " ORDER BY seq LIMIT ?", args);
    }

    private List<RunRecord> runs(String sql, List<?> args) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new RunRecord(
                        rs.getLong("seq"),
                        rs.getString("id"),
                        rs.getString("environment"),
                        rs.getString("evaluation_id"),
                        RunStatus.valueOf(rs.getString("status")),
                        rs.getBytes("metadata"),
                        rs.getTimestamp("created_at").toInstant(),
                        instant(rs.getTimestamp("started_at")),
                        instant(rs.getTimestamp("completed_at")),
                        rs.getString("result_dataset_id"),
                        rs.getString("result_revision_id"),
                        rs.getString("error_message"),
                        rs.getBoolean("is_baseline"),
                        instant(rs.getTimestamp("archived_at")),
                        rs.getBytes("summary")),
                "evaluation runs");
    }

    private static @Nullable Instant instant(@Nullable Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
