package ai.chalk.compute.server.store;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

/**
 * SQL queries and their results: every query is recorded (sync and async alike) so that its id can be polled for
 * fresh result links. Queued and running are one state, as Chalk's polling service reports them. An environment's
 * {@value #KEPT_FINISHED} newest finished queries are kept, each with the start of its SQL ({@link SqlQuery#fit}):
 * every query was kept, with its whole text, for as long as the store lived, so a tenant sending 32 MiB of SQL that
 * failed to parse, in a loop, filled the server's disk.
 */
public final class SqlJobStore {

    /** Where a query is. */
    public enum State {
        /** Queued or running. */
        RUNNING,
        SUCCEEDED,
        FAILED
    }

    /**
     * A query.
     *
     * @param id            its id
     * @param environment   the environment it ran in: only it polls the query
     * @param query         the SQL
     * @param resourceGroup the resource group it asked for, if any
     * @param persisted     whether its result is listed as links (else it is returned inline)
     * @param state         where it is
     * @param shards        the digests of its Parquet result files, once succeeded
     * @param error         why it failed, once failed
     * @param summary       what it did: rows, time, memory limit, resource group
     * @param createdAt     when it was received
     * @param finishedAt    when it ended
     */
    public record SqlJob(
            String id,
            String environment,
            String query,
            Optional<String> resourceGroup,
            boolean persisted,
            State state,
            List<String> shards,
            Optional<String> error,
            String summary,
            Instant createdAt,
            Optional<Instant> finishedAt) {}

    /** How many finished queries of an environment are kept, newest first. */
    public static final int KEPT_FINISHED = 1000;

    /** Inserts between two trims of an environment's finished queries: a trim's cost spread over them. */
    private static final int TRIM_EVERY = 50;

    private final Database db;
    private final Map<String, AtomicInteger> inserts = new ConcurrentHashMap<>();

    public SqlJobStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS sql_job (
                  id VARCHAR(64) PRIMARY KEY,
                  environment VARCHAR(64) NOT NULL,
                  query CLOB NOT NULL,
                  resource_group VARCHAR(255),
                  persisted BOOLEAN NOT NULL,
                  state VARCHAR(16) NOT NULL,
                  shards CLOB,
                  error CLOB,
                  summary VARCHAR(4096) NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  finished_at TIMESTAMP WITH TIME ZONE)""");
    }

    /** Records a query as RUNNING. */
    public void insert(
            String id,
            String environment,
            String query,
            Optional<String> resourceGroup,
            boolean persisted,
            String summary) {
        SqlQuery.update(
                db,
                "INSERT INTO sql_job (id, environment, query, resource_group, persisted, state, summary, created_at)"
                        + " VALUES (?,?,?,?,?,?,?,?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, environment);
                    ps.setString(3, SqlQuery.fit(query));
                    ps.setString(4, resourceGroup.orElse(null));
                    ps.setBoolean(5, persisted);
                    ps.setString(6, State.RUNNING.name());
                    ps.setString(7, summary);
                    ps.setTimestamp(8, Timestamp.from(Instant.now()));
                },
                "recording SQL query " + id);
        trimSometimes(environment);
    }

    /**
     * Records a query that ran while its caller waited, once it ended: one write, so a quick query costs the store
     * little (a crash while it ran leaves no record, and its caller saw the call fail).
     */
    public void insertFinished(SqlJob job) {
        SqlQuery.update(
                db,
                "INSERT INTO sql_job (id, environment, query, resource_group, persisted, state, shards, error, summary,"
                        + " created_at, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                ps -> {
                    ps.setString(1, job.id());
                    ps.setString(2, job.environment());
                    ps.setString(3, SqlQuery.fit(job.query()));
                    ps.setString(4, job.resourceGroup().orElse(null));
                    ps.setBoolean(5, job.persisted());
                    ps.setString(6, job.state().name());
                    ps.setString(7, String.join(",", job.shards()));
                    ps.setString(8, job.error().map(SqlQuery::fit).orElse(null));
                    ps.setString(9, job.summary());
                    ps.setTimestamp(10, Timestamp.from(job.createdAt()));
                    ps.setTimestamp(11, Timestamp.from(job.finishedAt().orElse(Instant.now())));
                },
                "recording SQL query " + job.id());
        trimSometimes(job.environment());
    }

    private void trimSometimes(String environment) {
        if (inserts.computeIfAbsent(environment, e -> new AtomicInteger()).incrementAndGet() % TRIM_EVERY == 0) {
            forgetAllButNewest(environment, KEPT_FINISHED);
        }
    }

    /** Forgets the environment's finished queries but the {@code kept} newest; returns how many it forgot. */
    public int forgetAllButNewest(String environment, int kept) {
        return SqlQuery.updateCount(
                db,
                "DELETE FROM sql_job WHERE environment = ? AND finished_at IS NOT NULL AND finished_at <"
                        + " (SELECT finished_at FROM sql_job WHERE environment = ? AND finished_at IS NOT NULL"
                        + " ORDER BY finished_at DESC OFFSET ? ROWS FETCH FIRST 1 ROW ONLY)",
                ps -> {
                    ps.setString(1, environment);
                    ps.setString(2, environment);
                    ps.setInt(3, kept - 1);
                },
                "forgetting old SQL queries");
    }

    /**
     * Gives {@code use} the environment and digest (hex) of each result file of the queries kept: those blobs are never
     * collected.
     */
    public void eachBlob(BiConsumer<String, String> use) {
        for (String[] row : SqlQuery.select(
                db,
                "SELECT environment, shards FROM sql_job WHERE shards IS NOT NULL AND shards <> ''",
                List.of(),
                rs -> new String[] {rs.getString(1), rs.getString(2)},
                "SQL query results")) {
            for (String digest : row[1].split(",")) {
                use.accept(row[0], digest);
            }
        }
    }

    /** Records a query's success with its result files. */
    public void succeeded(String id, List<String> shards, String summary) {
        finish(id, State.SUCCEEDED, String.join(",", shards), null, summary);
    }

    /** Records a query's failure. */
    public void failed(String id, String error) {
        finish(id, State.FAILED, null, SqlQuery.fit(error), null);
    }

    private void finish(String id, State state, String shards, String error, String summary) {
        SqlQuery.update(
                db,
                "UPDATE sql_job SET state = ?, shards = ?, error = ?, summary = COALESCE(?, summary),"
                        + " finished_at = ? WHERE id = ? AND state = 'RUNNING'",
                ps -> {
                    ps.setString(1, state.name());
                    ps.setString(2, shards);
                    ps.setString(3, error);
                    ps.setString(4, summary);
                    ps.setTimestamp(5, Timestamp.from(Instant.now()));
                    ps.setString(6, id);
                },
                "recording the end of SQL query " + id);
    }

    /**
     * Fails every query still RUNNING: at start, those a stopped server was running (they will never finish).
     *
     * @return how many
     */
    public int failRunning(String error) {
        return SqlQuery.updateCount(
                db,
                "UPDATE sql_job SET state = 'FAILED', error = ?, finished_at = ? WHERE state = 'RUNNING'",
                ps -> {
                    ps.setString(1, error);
                    ps.setTimestamp(2, Timestamp.from(Instant.now()));
                },
                "failing interrupted SQL queries");
    }

    /** The query with this id, whatever its environment (callers check it). */
    public Optional<SqlJob> find(String id) {
        return SqlQuery.select(
                        db,
                        "SELECT * FROM sql_job WHERE id = ?",
                        List.of(id),
                        rs -> {
                            String shards = rs.getString("shards");
                            Timestamp finished = rs.getTimestamp("finished_at");
                            return new SqlJob(
                                    rs.getString("id"),
                                    rs.getString("environment"),
                                    rs.getString("query"),
                                    Optional.ofNullable(rs.getString("resource_group")),
                                    rs.getBoolean("persisted"),
                                    State.valueOf(rs.getString("state")),
                                    shards == null || shards.isEmpty() ? List.of() : Arrays.asList(shards.split(",")),
                                    Optional.ofNullable(rs.getString("error")),
                                    rs.getString("summary"),
                                    rs.getTimestamp("created_at").toInstant(),
                                    Optional.ofNullable(finished).map(Timestamp::toInstant));
                        },
                        "SQL queries")
                .stream()
                .findFirst();
    }
}
