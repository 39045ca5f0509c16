package ai.chalk.compute.server.store;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Evaluation suites and evaluations in the embedded database, each in its environment. An evaluation is immutable once
 * created: what it pinned (dataset revision, task version, scorers) is stored as given, the scorers and metadata as
 * the serialized messages the service hands in, so the store needs no knowledge of the wire format.
 */
public final class EvaluationStore {

    /** A suite as recorded. */
    public record SuiteRecord(long seq, String id, String environment, String name, Instant createdAt) {}

    /**
     * An evaluation as recorded.
     *
     * @param scorers  the serialized scorer list, as the service wrote it
     * @param metadata the serialized metadata, as the service wrote it
     */
    public record EvaluationRecord(
            long seq,
            String id,
            String environment,
            @Nullable String suiteId,
            String name,
            String datasetId,
            String datasetRevisionId,
            String taskVersionId,
            byte[] scorers,
            byte[] metadata,
            Instant createdAt) {}

    private final Database db;

    public EvaluationStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS evaluation_suite (
                  seq BIGINT AUTO_INCREMENT,
                  id VARCHAR(64) PRIMARY KEY,
                  environment VARCHAR(64) NOT NULL,
                  name VARCHAR(255) NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");
        db.execute("""
                CREATE TABLE IF NOT EXISTS evaluation (
                  seq BIGINT AUTO_INCREMENT,
                  id VARCHAR(64) PRIMARY KEY,
                  environment VARCHAR(64) NOT NULL,
                  suite_id VARCHAR(64),
                  name VARCHAR(255) NOT NULL,
                  dataset_id VARCHAR(64) NOT NULL,
                  dataset_revision_id VARCHAR(64) NOT NULL,
                  task_version_id VARCHAR(64) NOT NULL,
                  scorers VARBINARY NOT NULL,
                  metadata VARBINARY NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");
    }

    /** Records a suite. */
    public SuiteRecord insertSuite(String environment, String id, String name, Instant at) {
        SqlQuery.update(
                db,
                "INSERT INTO evaluation_suite (id, environment, name, created_at) VALUES (?, ?, ?, ?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, environment);
                    ps.setString(3, name);
                    ps.setTimestamp(4, Timestamp.from(at));
                },
                "saving evaluation suite " + name);
        return suite(environment, id).orElseThrow();
    }

    /** The environment's suite with this id. */
    public Optional<SuiteRecord> suite(String environment, String id) {
        return suites("SELECT * FROM evaluation_suite WHERE environment = ? AND id = ?", List.of(environment, id))
                .stream()
                .findFirst();
    }

    /** The environment's suites in creation order. */
    public List<SuiteRecord> suites(String environment) {
        return suites("SELECT * FROM evaluation_suite WHERE environment = ? ORDER BY seq", List.of(environment));
    }

    private List<SuiteRecord> suites(String sql, List<?> args) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new SuiteRecord(
                        rs.getLong("seq"),
                        rs.getString("id"),
                        rs.getString("environment"),
                        rs.getString("name"),
                        rs.getTimestamp("created_at").toInstant()),
                "evaluation suites");
    }

    /** Records an evaluation. */
    public EvaluationRecord insertEvaluation(EvaluationRecord e) {
        SqlQuery.update(
                db,
                "INSERT INTO evaluation (id, environment, suite_id, name, dataset_id, dataset_revision_id,"
                        + " task_version_id, scorers, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ps -> {
                    ps.setString(1, e.id());
                    ps.setString(2, e.environment());
                    ps.setString(3, e.suiteId());
                    ps.setString(4, e.name());
                    ps.setString(5, e.datasetId());
                    ps.setString(6, e.datasetRevisionId());
                    ps.setString(7, e.taskVersionId());
                    ps.setBytes(8, e.scorers());
                    ps.setBytes(9, e.metadata());
                    ps.setTimestamp(10, Timestamp.from(e.createdAt()));
                },
                "saving evaluation " + e.name());
        return evaluation(e.environment(), e.id()).orElseThrow();
    }

    /** The environment's evaluation with this id. */
    public Optional<EvaluationRecord> evaluation(String environment, String id) {
        return evaluations("SELECT * FROM evaluation WHERE environment = ? AND id = ?", List.of(environment, id))
                .stream()
                .findFirst();
    }

    /**
     * The environment's evaluations after {@code afterSeq} in creation order, at most {@code limit}, only those of
     * {@code suiteId} when given.
     */
    public List<EvaluationRecord> evaluations(String environment, @Nullable String suiteId, long afterSeq, int limit) {
        List<Object> args = new ArrayList<>(List.of(environment, afterSeq));
        String sql = "SELECT * FROM evaluation WHERE environment = ? AND seq > ?";
        if (suiteId != null) {
            sql += " AND suite_id = ?";
            args.add(suiteId);
        }
        args.add(limit);
        return evaluations(sql + " ORDER BY seq LIMIT ?", args);
    }

    private List<EvaluationRecord> evaluations(String sql, List<?> args) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new EvaluationRecord(
                        rs.getLong("seq"),
                        rs.getString("id"),
                        rs.getString("environment"),
                        rs.getString("suite_id"),
                        rs.getString("name"),
                        rs.getString("dataset_id"),
                        rs.getString("dataset_revision_id"),
                        rs.getString("task_version_id"),
                        rs.getBytes("scorers"),
                        rs.getBytes("metadata"),
                        rs.getTimestamp("created_at").toInstant()),
                "evaluations");
    }
}
