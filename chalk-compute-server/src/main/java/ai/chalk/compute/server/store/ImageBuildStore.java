package ai.chalk.compute.server.store;

import static ai.chalk.compute.server.store.SqlQuery.fit;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Image builds and their logs in the embedded database: one row per build (its spec, status, resulting image) and one
 * row per line of build output, so that builds, their cache and their logs survive a restart.
 */
public final class ImageBuildStore {

    /** Longest line of build output kept; longer ones (a progress bar redrawn without line breaks) are cut. */
    static final int MAX_LINE_CHARS = 8192;

    /** Where a build is in its life. */
    public enum Status {
        BUILDING,
        SUCCEEDED,
        FAILED;

        /** Whether the build will not change any more. */
        public boolean finished() {
            return this != BUILDING;
        }
    }

    /**
     * A build as the server remembers it.
     *
     * @param seq         insertion order, used as the list cursor
     * @param id          the build id
     * @param contentHash hex SHA-256 of the spec's deterministic serialisation
     * @param status      where the build is
     * @param imageRef    the image it produced, once it succeeded
     * @param baseImage   the spec's base image
     * @param spec        the spec's deterministic serialisation ({@code chalk.sandbox.v1.ImageSpec})
     * @param error       why it failed, naming the step
     * @param tag         the extra tag a client asked for (BuildCustomImage's {@code tag})
     * @param createdAt   when it was asked for
     * @param finishedAt  when it succeeded or failed
     * @param environment the environment that asked for it: builds, their logs and their cache hits are its own
     */
    public record BuildRecord(
            long seq,
            String id,
            String contentHash,
            Status status,
            Optional<String> imageRef,
            String baseImage,
            byte[] spec,
            Optional<String> error,
            Optional<String> tag,
            Instant createdAt,
            Optional<Instant> finishedAt,
            String environment) {}

    /**
     * One line of a build's output.
     *
     * @param seq      its position in the build's log, from 1
     * @param at       when it was written
     * @param severity {@code INFO} for output, {@code ERROR} for the failure's explanation
     * @param text     the line, without its line break
     */
    public record LogLine(long seq, Instant at, String severity, String text) {}

    private final Database db;

    public ImageBuildStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS image_build (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  content_hash VARCHAR(64) NOT NULL,
                  status VARCHAR(16) NOT NULL,
                  image_ref VARCHAR(1024),
                  base_image VARCHAR(1024) NOT NULL,
                  spec BLOB NOT NULL,
                  error VARCHAR(4096),
                  tag VARCHAR(1024),
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  finished_at TIMESTAMP WITH TIME ZONE)""");
        db.execute("CREATE INDEX IF NOT EXISTS image_build_hash ON image_build (content_hash, seq)");
        db.environmentColumn("image_build");
        db.execute(
                "CREATE INDEX IF NOT EXISTS image_build_environment ON image_build (environment, content_hash, seq)");
        db.execute("CREATE INDEX IF NOT EXISTS image_build_ref ON image_build (image_ref, environment)");
        db.execute("""
                CREATE TABLE IF NOT EXISTS image_build_log (
                  build_id VARCHAR(64) NOT NULL,
                  seq BIGINT NOT NULL,
                  logged_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  severity VARCHAR(16) NOT NULL,
                  line VARCHAR(8300) NOT NULL,
                  PRIMARY KEY (build_id, seq))""");
    }

    /** Records a new build of the environment in status BUILDING and returns it. */
    public BuildRecord insert(
            String environment,
            String id,
            String contentHash,
            String baseImage,
            byte[] spec,
            Optional<String> tag,
            Instant createdAt) {
        synchronized (db) {
            return db.write("saving image build " + id, c -> {
                try (PreparedStatement ps = c.prepareStatement(
                        "INSERT INTO image_build (id, content_hash, status, base_image, spec, tag, created_at,"
                                + " environment) VALUES (?,?,?,?,?,?,?,?)",
                        new String[] {"seq"})) {
                    ps.setString(1, id);
                    ps.setString(2, contentHash);
                    ps.setString(3, Status.BUILDING.name());
                    ps.setString(4, baseImage);
                    ps.setBytes(5, spec);
                    ps.setString(6, tag.orElse(null));
                    ps.setTimestamp(7, Timestamp.from(createdAt));
                    ps.setString(8, environment);
                    ps.executeUpdate();
                    try (ResultSet keys = ps.getGeneratedKeys()) {
                        keys.next();
                        return new BuildRecord(
                                keys.getLong(1),
                                id,
                                contentHash,
                                Status.BUILDING,
                                Optional.empty(),
                                baseImage,
                                spec,
                                Optional.empty(),
                                tag,
                                createdAt,
                                Optional.empty(),
                                environment);
                    }
                }
            });
        }
    }

    /** Records the end of a build: SUCCEEDED with its image, or FAILED with why. */
    public void finish(String id, Status status, Optional<String> imageRef, Optional<String> error) {
        SqlQuery.update(
                db,
                "UPDATE image_build SET status = ?, image_ref = ?, error = ?, finished_at = ?" + " WHERE id = ?",
                ps -> {
                    ps.setString(1, status.name());
                    ps.setString(2, imageRef.orElse(null));
                    ps.setString(3, fit(error.orElse(null)));
                    ps.setTimestamp(4, Timestamp.from(Instant.now()));
                    ps.setString(5, id);
                },
                "updating image build " + id);
    }

    /**
     * Records every build still BUILDING as FAILED with {@code reason}: after a restart no process is building them.
     *
     * @return the ids of the builds so recorded
     */
    public List<String> failUnfinished(String reason) {
        List<String> ids = SqlQuery.select(
                db,
                "SELECT id FROM image_build WHERE status = ?",
                List.of(Status.BUILDING.name()),
                rs -> rs.getString(1),
                "image builds");
        for (String id : ids) {
            finish(id, Status.FAILED, Optional.empty(), Optional.of(reason));
        }
        return ids;
    }

    /** The build with this id, whatever its environment (callers check it). */
    public Optional<BuildRecord> find(String id) {
        return query("SELECT * FROM image_build WHERE id = ?", List.of(id)).stream()
                .findFirst();
    }

    /** The environment's newest build of a spec, whatever its status. */
    public Optional<BuildRecord> latestFor(String environment, String contentHash) {
        return query(
                        "SELECT * FROM image_build WHERE environment = ? AND content_hash = ? ORDER BY seq DESC LIMIT 1",
                        List.of(environment, contentHash))
                .stream()
                .findFirst();
    }

    /** The ids of the environment's builds of a spec, newest first. */
    public List<String> idsFor(String environment, String contentHash) {
        return SqlQuery.select(
                db,
                "SELECT id FROM image_build WHERE environment = ? AND content_hash = ?" + " ORDER BY seq DESC",
                List.of(environment, contentHash),
                rs -> rs.getString(1),
                "image builds");
    }

    /**
     * A page of the environment's builds, newest first.
     *
     * @param beforeSeq only builds older than this sequence number (the cursor); 0 for the newest
     * @param limit     at most this many
     */
    public List<BuildRecord> list(String environment, long beforeSeq, int limit) {
        return beforeSeq > 0
                ? query(
                        "SELECT * FROM image_build WHERE environment = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                        List.of(environment, beforeSeq, limit))
                : query(
                        "SELECT * FROM image_build WHERE environment = ? ORDER BY seq DESC LIMIT ?",
                        List.of(environment, limit));
    }

    /**
     * Whether image {@code imageRef} is one this server built, for other environments than {@code environment} only
     * (false for a name it never built).
     */
    public boolean builtOnlyElsewhere(String environment, String imageRef) {
        return SqlQuery.select(
                        db,
                        "SELECT COUNT(*), COUNT(CASE WHEN environment = ? THEN 1 END) FROM image_build"
                                + " WHERE image_ref = ?",
                        List.of(environment, imageRef),
                        rs -> rs.getLong(1) > 0 && rs.getLong(2) == 0,
                        "image builds")
                .get(0);
    }

    /** Whether {@code environment} has a build that made image {@code imageRef}. */
    public boolean builtIn(String environment, String imageRef) {
        return SqlQuery.select(
                        db,
                        "SELECT COUNT(*) FROM image_build WHERE image_ref = ? AND environment = ?",
                        List.of(imageRef, environment),
                        rs -> rs.getLong(1) > 0,
                        "image builds")
                .get(0);
    }

    /** How many builds there are of a spec (for tests and health: a cache hit adds none). */
    public long countFor(String contentHash) {
        return SqlQuery.select(
                        db,
                        "SELECT COUNT(*) FROM image_build WHERE content_hash = ?",
                        List.of(contentHash),
                        rs -> rs.getLong(1),
                        "image builds")
                .get(0);
    }

    /** Appends one line to a build's log; the caller numbers the lines of a build from 1. */
    public void appendLog(String buildId, long seq, Instant at, String severity, String text) {
        SqlQuery.update(
                db,
                "INSERT INTO image_build_log (build_id, seq, logged_at, severity, line)" + " VALUES (?,?,?,?,?)",
                ps -> {
                    ps.setString(1, buildId);
                    ps.setLong(2, seq);
                    ps.setTimestamp(3, Timestamp.from(at));
                    ps.setString(4, severity);
                    ps.setString(5, cut(text));
                },
                "saving a line of image build " + buildId);
    }

    /** The number of a build's last log line; 0 when it has none. */
    public long lastLogSeq(String buildId) {
        return SqlQuery.select(
                        db,
                        "SELECT COALESCE(MAX(seq), 0) FROM image_build_log WHERE build_id = ?",
                        List.of(buildId),
                        rs -> rs.getLong(1),
                        "image build logs")
                .get(0);
    }

    /**
     * Lines of a build's log in order.
     *
     * @param afterSeq only lines after this one (the page token); 0 for the first
     * @param from     only lines written at or after this instant, if given
     * @param until    only lines written before this instant, if given
     * @param limit    at most this many
     */
    public List<LogLine> logs(
            String buildId, long afterSeq, Optional<Instant> from, Optional<Instant> until, int limit) {
        StringBuilder sql = new StringBuilder("SELECT * FROM image_build_log WHERE build_id = ? AND seq > ?");
        List<Object> args = new ArrayList<>(List.of(buildId, afterSeq));
        from.ifPresent(t -> {
            sql.append(" AND logged_at >= ?");
            args.add(Timestamp.from(t));
        });
        until.ifPresent(t -> {
            sql.append(" AND logged_at < ?");
            args.add(Timestamp.from(t));
        });
        sql.append(" ORDER BY seq LIMIT ?");
        args.add(limit);
        return SqlQuery.select(
                db,
                sql.toString(),
                args,
                rs -> new LogLine(
                        rs.getLong("seq"),
                        rs.getTimestamp("logged_at").toInstant(),
                        rs.getString("severity"),
                        rs.getString("line")),
                "image build logs");
    }

    private static String cut(String line) {
        if (line.length() <= MAX_LINE_CHARS) {
            return line;
        }
        return line.substring(0, MAX_LINE_CHARS) + "... (cut, " + line.length() + " characters in all)";
    }

    private List<BuildRecord> query(String sql, List<?> args) {
        return SqlQuery.select(db, sql, args, ImageBuildStore::read, "image builds");
    }

    private static BuildRecord read(ResultSet rs) throws SQLException {
        Timestamp finished = rs.getTimestamp("finished_at");
        return new BuildRecord(
                rs.getLong("seq"),
                rs.getString("id"),
                rs.getString("content_hash"),
                Status.valueOf(rs.getString("status")),
                Optional.ofNullable(rs.getString("image_ref")),
                rs.getString("base_image"),
                rs.getBytes("spec"),
                Optional.ofNullable(rs.getString("error")),
                Optional.ofNullable(rs.getString("tag")),
                rs.getTimestamp("created_at").toInstant(),
                Optional.ofNullable(finished).map(Timestamp::toInstant),
                rs.getString("environment"));
    }
}
