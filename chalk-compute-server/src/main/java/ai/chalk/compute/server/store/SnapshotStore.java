package ai.chalk.compute.server.store;

import static ai.chalk.compute.server.store.SqlQuery.fit;
import static ai.chalk.compute.server.store.SqlQuery.likeEscape;
import static ai.chalk.compute.server.store.SqlQuery.placeholders;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/** Sandbox snapshot records in the embedded database; their files live on disk under the data directory. */
public final class SnapshotStore {

    /** Lifecycle of a snapshot, named as in Chalk's {@code chalk.sandbox.v2.SandboxSnapshotStatus}. */
    public enum Status {
        PENDING,
        IN_PROGRESS,
        COMPLETED,
        FAILED;

        /** Whether the snapshot will not change any more. */
        public boolean finished() {
            return this == COMPLETED || this == FAILED;
        }
    }

    /**
     * A snapshot as the server remembers it.
     *
     * @param seq           insertion order, used as the list cursor
     * @param id            the snapshot id
     * @param sandboxId     the sandbox it was taken of
     * @param status        where it is in its lifecycle
     * @param statusMessage why it is in its status, in a sentence
     * @param createdAt     when it was asked for
     * @param completedAt   when it became COMPLETED or FAILED
     * @param spec          the sandbox's serialised {@code chalk.container.v1.ChalkContainerSpec}; sandboxes created
     *                      from the snapshot get it
     * @param environment   the environment it belongs to (its sandbox's)
     */
    public record SnapshotRecord(
            long seq,
            String id,
            String sandboxId,
            Status status,
            Optional<String> statusMessage,
            Instant createdAt,
            Optional<Instant> completedAt,
            byte[] spec,
            String environment) {}

    /**
     * What {@link #list} returns: snapshots in creation order, filtered.
     *
     * @param environment only snapshots of this environment; empty for every environment's (the server's own work)
     * @param sandboxIds only snapshots of these sandboxes (empty: any)
     * @param statuses   only these statuses (empty: any)
     * @param text       only snapshots whose id or sandbox id contains this, ignoring case (empty: any)
     * @param descending newest first
     * @param cursor     only snapshots after this sequence number in the chosen order; 0 for the start
     * @param limit      at most this many
     */
    public record Query(
            Optional<String> environment,
            Collection<String> sandboxIds,
            Collection<Status> statuses,
            String text,
            boolean descending,
            long cursor,
            int limit) {}

    private final Database db;

    public SnapshotStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS sandbox_snapshot (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  sandbox_id VARCHAR(64) NOT NULL,
                  status VARCHAR(32) NOT NULL,
                  status_message VARCHAR(4096),
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  completed_at TIMESTAMP WITH TIME ZONE,
                  spec VARBINARY)""");
        db.environmentColumn("sandbox_snapshot");
        db.execute("CREATE INDEX IF NOT EXISTS sandbox_snapshot_environment ON sandbox_snapshot (environment, seq)");
    }

    /** Inserts a new snapshot record of the environment in status PENDING and returns it. */
    public SnapshotRecord insert(String environment, String id, String sandboxId, Instant createdAt, byte[] spec) {
        synchronized (db) {
            return db.write("saving snapshot " + id, c -> {
                try (PreparedStatement ps = c.prepareStatement(
                        "INSERT INTO sandbox_snapshot (id, sandbox_id, status, created_at, spec, environment)"
                                + " VALUES (?,?,?,?,?,?)",
                        new String[] {"seq"})) {
                    ps.setString(1, id);
                    ps.setString(2, sandboxId);
                    ps.setString(3, Status.PENDING.name());
                    ps.setTimestamp(4, Timestamp.from(createdAt));
                    ps.setBytes(5, spec);
                    ps.setString(6, environment);
                    ps.executeUpdate();
                    try (ResultSet keys = ps.getGeneratedKeys()) {
                        keys.next();
                        return new SnapshotRecord(
                                keys.getLong(1),
                                id,
                                sandboxId,
                                Status.PENDING,
                                Optional.empty(),
                                createdAt,
                                Optional.empty(),
                                spec,
                                environment);
                    }
                }
            });
        }
    }

    /** Moves a snapshot to a new status; a finished status also records when. */
    public void updateStatus(String id, Status status, String statusMessage) {
        String sql = "UPDATE sandbox_snapshot SET status = ?, status_message = ?, completed_at = ? WHERE id = ?";
        SqlQuery.update(
                db,
                sql,
                ps -> {
                    ps.setString(1, status.name());
                    ps.setString(2, fit(statusMessage));
                    ps.setTimestamp(3, status.finished() ? Timestamp.from(Instant.now()) : null);
                    ps.setString(4, id);
                },
                "updating snapshot " + id);
    }

    /** The snapshot with this id, whatever its environment (callers check it). */
    public Optional<SnapshotRecord> find(String id) {
        return query("SELECT * FROM sandbox_snapshot WHERE id = ?", List.of(id)).stream()
                .findFirst();
    }

    /** A page of snapshots matching {@code q}; see {@link Query}. */
    public List<SnapshotRecord> list(Query q) {
        StringBuilder sql = new StringBuilder("SELECT * FROM sandbox_snapshot WHERE 1 = 1");
        List<Object> args = new ArrayList<>();
        q.environment().ifPresent(e -> {
            sql.append(" AND environment = ?");
            args.add(e);
        });
        if (q.cursor() > 0) {
            sql.append(q.descending() ? " AND seq < ?" : " AND seq > ?");
            args.add(q.cursor());
        }
        if (!q.sandboxIds().isEmpty()) {
            sql.append(" AND sandbox_id IN (")
                    .append(placeholders(q.sandboxIds().size()))
                    .append(')');
            args.addAll(q.sandboxIds());
        }
        if (!q.statuses().isEmpty()) {
            sql.append(" AND status IN (")
                    .append(placeholders(q.statuses().size()))
                    .append(')');
            q.statuses().forEach(s -> args.add(s.name()));
        }
        if (!q.text().isEmpty()) {
            sql.append(" AND (LOWER(id) LIKE ? ESCAPE '\\' OR LOWER(sandbox_id) LIKE ? ESCAPE '\\')");
            String like = "%" + likeEscape(q.text().toLowerCase(Locale.ROOT)) + "%";
            args.add(like);
            args.add(like);
        }
        sql.append(" ORDER BY seq ").append(q.descending() ? "DESC" : "ASC").append(" LIMIT ?");
        args.add(q.limit());
        return query(sql.toString(), args);
    }

    /** Snapshots in these statuses, oldest first (recovery after a restart). */
    public List<SnapshotRecord> withStatus(Collection<Status> statuses) {
        return list(new Query(Optional.empty(), List.of(), statuses, "", false, 0, Integer.MAX_VALUE));
    }

    /**
     * The specs of the environment's snapshots that start sandboxes, or will once taken: all but the FAILED ones.
     */
    public List<byte[]> usableSpecs(String environment) {
        return SqlQuery.select(
                db,
                "SELECT spec FROM sandbox_snapshot WHERE environment = ? AND status <> ? AND spec IS NOT NULL",
                List.of(environment, Status.FAILED.name()),
                rs -> rs.getBytes(1),
                "snapshot specs");
    }

    public void delete(String id) {
        synchronized (db) {
            db.write("deleting snapshot " + id, c -> {
                try (PreparedStatement ps = c.prepareStatement("DELETE FROM sandbox_snapshot WHERE id = ?")) {
                    ps.setString(1, id);
                    return ps.executeUpdate();
                }
            });
        }
    }

    private List<SnapshotRecord> query(String sql, List<?> args) {
        return SqlQuery.select(db, sql, args, SnapshotStore::read, "snapshots");
    }

    private static SnapshotRecord read(ResultSet rs) throws SQLException {
        Timestamp completed = rs.getTimestamp("completed_at");
        return new SnapshotRecord(
                rs.getLong("seq"),
                rs.getString("id"),
                rs.getString("sandbox_id"),
                Status.valueOf(rs.getString("status")),
                Optional.ofNullable(rs.getString("status_message")),
                rs.getTimestamp("created_at").toInstant(),
                Optional.ofNullable(completed).map(Timestamp::toInstant),
                rs.getBytes("spec"),
                rs.getString("environment"));
    }
}
