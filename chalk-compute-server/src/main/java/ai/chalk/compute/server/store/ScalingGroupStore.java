package ai.chalk.compute.server.store;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Scaling groups, their immutable revisions (each keeps the spec it was created with) and which revision serves
 * (the group's traffic), in the embedded database.
 */
public final class ScalingGroupStore {

    /**
     * A scaling group.
     *
     * @param seq               insertion order, the list cursor
     * @param id                its id
     * @param name              its name (the container spec's name, or the function's), unique among its
     *                          environment's live groups
     * @param kind              what its replicas run: {@code container} (its spec's image) or {@code function}
     * @param currentRevisionId the revision that serves
     * @param status            {@code pending}, {@code ready}, {@code degraded}, {@code failed} or {@code deleted}
     * @param statusMessage     the last error, if any
     * @param createdAt         when it was created
     * @param updatedAt         when its revision or status last changed
     * @param deletedAt         when it was deleted
     * @param environment       the environment it belongs to; its replicas run there
     */
    public record GroupRecord(
            long seq,
            String id,
            String name,
            String kind,
            String currentRevisionId,
            String status,
            Optional<String> statusMessage,
            Instant createdAt,
            Instant updatedAt,
            Optional<Instant> deletedAt,
            String environment) {}

    /**
     * A revision of a scaling group.
     *
     * @param seq       insertion order, the list cursor
     * @param id        its id
     * @param groupId   the group's id
     * @param spec      its {@code chalk.scalinggroup.v1.ScalingGroupSpec}, serialised
     * @param createdAt when it was created
     */
    public record RevisionRecord(long seq, String id, String groupId, byte[] spec, Instant createdAt) {}

    private final Database db;

    public ScalingGroupStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS scaling_group (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  name VARCHAR(255) NOT NULL,
                  kind VARCHAR(16) NOT NULL,
                  current_revision_id VARCHAR(64) NOT NULL,
                  status VARCHAR(32) NOT NULL,
                  status_message VARCHAR(4096),
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  deleted_at TIMESTAMP WITH TIME ZONE)""");
        db.execute("CREATE INDEX IF NOT EXISTS scaling_group_name ON scaling_group (name, seq)");
        db.execute("""
                CREATE TABLE IF NOT EXISTS scaling_group_revision (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  group_id VARCHAR(64) NOT NULL,
                  spec BLOB NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");
        db.environmentColumn("scaling_group");
        db.execute("CREATE INDEX IF NOT EXISTS scaling_group_environment ON scaling_group (environment, name, seq)");
    }

    /**
     * Records a new group of the environment whose first revision is {@code revisionId} with {@code spec}; status
     * pending.
     */
    public GroupRecord insertGroup(
            String environment, String id, String name, String kind, String revisionId, byte[] spec, Instant at) {
        SqlQuery.update(
                db,
                "INSERT INTO scaling_group (id, name, kind, current_revision_id, status, created_at,"
                        + " updated_at, environment) VALUES (?,?,?,?,?,?,?,?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, name);
                    ps.setString(3, kind);
                    ps.setString(4, revisionId);
                    ps.setString(5, "pending");
                    ps.setTimestamp(6, Timestamp.from(at));
                    ps.setTimestamp(7, Timestamp.from(at));
                    ps.setString(8, environment);
                },
                "saving scaling group " + name);
        insertRevision(revisionId, id, spec, at);
        return group(id).orElseThrow();
    }

    /** Records a new revision of a group (it does not serve until {@link #setCurrent}). */
    public RevisionRecord insertRevision(String id, String groupId, byte[] spec, Instant at) {
        SqlQuery.update(
                db,
                "INSERT INTO scaling_group_revision (id, group_id, spec, created_at) VALUES (?,?,?,?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, groupId);
                    ps.setBytes(3, spec);
                    ps.setTimestamp(4, Timestamp.from(at));
                },
                "saving a revision of scaling group " + groupId);
        return revision(id).orElseThrow();
    }

    /** Makes {@code revisionId} the group's serving revision; its status goes back to pending. */
    public void setCurrent(String groupId, String revisionId, Instant at) {
        SqlQuery.update(
                db,
                "UPDATE scaling_group SET current_revision_id = ?, status = 'pending',"
                        + " status_message = NULL, updated_at = ? WHERE id = ?",
                ps -> {
                    ps.setString(1, revisionId);
                    ps.setTimestamp(2, Timestamp.from(at));
                    ps.setString(3, groupId);
                },
                "routing scaling group " + groupId);
    }

    /** Records a group's status and why (empty message: clears it). */
    public void setStatus(String groupId, String status, Optional<String> message) {
        SqlQuery.update(
                db,
                "UPDATE scaling_group SET status = ?, status_message = ?, updated_at = ? WHERE id = ?",
                ps -> {
                    ps.setString(1, status);
                    ps.setString(2, SqlQuery.fit(message.orElse(null)));
                    ps.setTimestamp(3, Timestamp.from(Instant.now()));
                    ps.setString(4, groupId);
                },
                "updating the status of scaling group " + groupId);
    }

    /** Marks a group deleted. */
    public void delete(String groupId, Instant at) {
        SqlQuery.update(
                db,
                "UPDATE scaling_group SET status = 'deleted', deleted_at = ?, updated_at = ? WHERE id = ?",
                ps -> {
                    ps.setTimestamp(1, Timestamp.from(at));
                    ps.setTimestamp(2, Timestamp.from(at));
                    ps.setString(3, groupId);
                },
                "deleting scaling group " + groupId);
    }

    /** The group with this id, whatever its environment (callers check it). */
    public Optional<GroupRecord> group(String id) {
        return groups("SELECT * FROM scaling_group WHERE id = ?", List.of(id)).stream()
                .findFirst();
    }

    /** The environment's live (not deleted) group of this name. */
    public Optional<GroupRecord> liveGroupNamed(String environment, String name) {
        return groups(
                        "SELECT * FROM scaling_group WHERE environment = ? AND name = ? AND deleted_at IS NULL"
                                + " ORDER BY seq DESC LIMIT 1",
                        List.of(environment, name))
                .stream()
                .findFirst();
    }

    /** A page of the environment's groups in creation order after the cursor {@code afterSeq}. */
    public List<GroupRecord> listGroups(String environment, long afterSeq, int limit, boolean includeDeleted) {
        return groups(
                "SELECT * FROM scaling_group WHERE environment = ? AND seq > ?"
                        + (includeDeleted ? "" : " AND deleted_at IS NULL") + " ORDER BY seq LIMIT ?",
                List.of(environment, afterSeq, limit));
    }

    /** Every live group, for recovery at start. */
    public List<GroupRecord> liveGroups() {
        return groups("SELECT * FROM scaling_group WHERE deleted_at IS NULL ORDER BY seq", List.of());
    }

    public Optional<RevisionRecord> revision(String id) {
        return revisions("SELECT * FROM scaling_group_revision WHERE id = ?", List.of(id)).stream()
                .findFirst();
    }

    /** A page of a group's revisions in creation order. */
    public List<RevisionRecord> listRevisions(String groupId, long afterSeq, int limit) {
        return revisions(
                "SELECT * FROM scaling_group_revision WHERE group_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                List.of(groupId, afterSeq, limit));
    }

    /** The newest revision of a group. */
    public RevisionRecord latestRevision(String groupId) {
        return revisions(
                        "SELECT * FROM scaling_group_revision WHERE group_id = ? ORDER BY seq DESC LIMIT 1",
                        List.of(groupId))
                .get(0);
    }

    /** How many revisions a group has. */
    public long revisionCount(String groupId) {
        return SqlQuery.select(
                        db,
                        "SELECT COUNT(*) FROM scaling_group_revision WHERE group_id = ?",
                        List.of(groupId),
                        rs -> rs.getLong(1),
                        "scaling group revisions")
                .get(0);
    }

    /** Every revision of the environment's live (not deleted) groups: any of them can serve again. */
    public List<RevisionRecord> liveRevisions(String environment) {
        return revisions(
                "SELECT r.* FROM scaling_group_revision r JOIN scaling_group g ON g.id = r.group_id"
                        + " WHERE g.environment = ? AND g.deleted_at IS NULL ORDER BY r.seq",
                List.of(environment));
    }

    /** The revisions of the environment's groups created at or after {@code since}, deleted groups' included. */
    public List<RevisionRecord> revisionsCreatedSince(String environment, Instant since) {
        return revisions(
                "SELECT r.* FROM scaling_group_revision r JOIN scaling_group g ON g.id = r.group_id"
                        + " WHERE g.environment = ? AND r.created_at >= ? ORDER BY r.seq",
                List.of(environment, Timestamp.from(since)));
    }

    private List<GroupRecord> groups(String sql, List<?> args) {
        return SqlQuery.select(db, sql, args, ScalingGroupStore::readGroup, "scaling groups");
    }

    private List<RevisionRecord> revisions(String sql, List<?> args) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new RevisionRecord(
                        rs.getLong("seq"),
                        rs.getString("id"),
                        rs.getString("group_id"),
                        rs.getBytes("spec"),
                        rs.getTimestamp("created_at").toInstant()),
                "scaling group revisions");
    }

    private static GroupRecord readGroup(ResultSet rs) throws SQLException {
        return new GroupRecord(
                rs.getLong("seq"),
                rs.getString("id"),
                rs.getString("name"),
                rs.getString("kind"),
                rs.getString("current_revision_id"),
                rs.getString("status"),
                Optional.ofNullable(rs.getString("status_message")),
                rs.getTimestamp("created_at").toInstant(),
                rs.getTimestamp("updated_at").toInstant(),
                FunctionStore.instant(rs, "deleted_at"),
                rs.getString("environment"));
    }
}
