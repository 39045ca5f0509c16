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
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Sandbox records in the embedded database. */
public final class SandboxStore {

    /**
     * How many finished sandboxes of an environment are kept, newest first: each keeps its spec, and a
     * tenant creating sandboxes in a loop grew the store without end.
     */
    public static final int KEPT_FINISHED = 10_000;

    /** Inserts between two trims of an environment's finished sandboxes: a trim's cost spread over them. */
    private static final int TRIM_EVERY = 100;

    private static final Logger log = LoggerFactory.getLogger(SandboxStore.class);

    private final Database db;
    private final int keptFinished;
    private final Map<String, AtomicInteger> inserts = new ConcurrentHashMap<>();

    public SandboxStore(Database db) {
        this(db, KEPT_FINISHED);
    }

    /** A store keeping {@code keptFinished} finished sandboxes of each environment (at least about that many). */
    SandboxStore(Database db, int keptFinished) {
        this.db = db;
        this.keptFinished = keptFinished;
        db.execute("""
                CREATE TABLE IF NOT EXISTS sandbox (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  name VARCHAR(255),
                  state VARCHAR(32) NOT NULL,
                  image VARCHAR(1024) NOT NULL,
                  runtime VARCHAR(32) NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  finished_at TIMESTAMP WITH TIME ZONE,
                  status_message VARCHAR(4096),
                  request VARBINARY)""");
        db.execute("ALTER TABLE sandbox ADD COLUMN IF NOT EXISTS spec VARBINARY");
        db.execute("ALTER TABLE sandbox ADD COLUMN IF NOT EXISTS build_id VARCHAR(64)");
        db.environmentColumn("sandbox");
        db.execute("CREATE INDEX IF NOT EXISTS sandbox_environment ON sandbox (environment, seq)");
        db.execute("CREATE INDEX IF NOT EXISTS sandbox_environment_created ON sandbox (environment, created_at)");
        db.execute("CREATE INDEX IF NOT EXISTS sandbox_environment_finished ON sandbox (environment, finished_at)");
    }

    /**
     * What {@link #search} returns: sandboxes in creation order, filtered.
     *
     * @param environment only sandboxes of this environment
     * @param states     only these states (empty: any)
     * @param names      only sandboxes with one of these names (empty: any)
     * @param images     only sandboxes asked to run one of these images, "" for the default (empty: any)
     * @param text       only sandboxes whose id or name contains this, ignoring case (empty: any)
     * @param descending newest first
     * @param cursor     only sandboxes after this sequence number in the chosen order (the cursor); 0 for the start
     * @param limit      at most this many
     */
    public record Query(
            String environment,
            Collection<SandboxState> states,
            Collection<String> names,
            Collection<String> images,
            String text,
            boolean descending,
            long cursor,
            int limit) {}

    /**
     * Inserts a new record and returns it with its sequence number. It keeps the sandbox's spec, not the request that
     * made it: a v1 request's image spec (up to 64 MiB of files) is its image build's to keep.
     *
     * @param environment the environment the sandbox belongs to
     * @param buildId     the image build the sandbox's image came from, when it was created from an image spec
     */
    public SandboxRecord insert(
            String environment,
            String id,
            Optional<String> name,
            SandboxState state,
            String image,
            String runtime,
            Instant createdAt,
            byte[] containerSpec,
            String statusMessage,
            Optional<String> buildId) {
        if (inserts.computeIfAbsent(environment, e -> new AtomicInteger()).incrementAndGet() % TRIM_EVERY == 0) {
            try {
                forgetAllButNewestFinished(environment, keptFinished);
            } catch (StoreException e) {
                // the new sandbox is recorded all the same; the next trim tries again
                log.warn("Forgetting old sandboxes of environment {} failed: {}", environment, e.getMessage());
            }
        }
        synchronized (db) {
            return db.write("saving sandbox " + id, c -> {
                try (PreparedStatement ps = c.prepareStatement(
                        "INSERT INTO sandbox (id, name, state, image, runtime, created_at, request, status_message,"
                                + " finished_at, spec, build_id, environment) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                        new String[] {"seq"})) {
                    ps.setString(1, id);
                    ps.setString(2, name.orElse(null));
                    ps.setString(3, state.name());
                    ps.setString(4, image);
                    ps.setString(5, runtime);
                    ps.setTimestamp(6, Timestamp.from(createdAt));
                    ps.setBytes(7, null); // records before specs were kept had the request alone
                    ps.setString(8, fit(statusMessage));
                    Instant finishedAt = state.finished() ? Instant.now() : null;
                    ps.setTimestamp(9, finishedAt == null ? null : Timestamp.from(finishedAt));
                    ps.setBytes(10, containerSpec);
                    ps.setString(11, buildId.orElse(null));
                    ps.setString(12, environment);
                    ps.executeUpdate();
                    try (ResultSet keys = ps.getGeneratedKeys()) {
                        keys.next();
                        return new SandboxRecord(
                                keys.getLong(1),
                                id,
                                name,
                                state,
                                image,
                                runtime,
                                createdAt,
                                Optional.ofNullable(finishedAt),
                                Optional.ofNullable(fit(statusMessage)),
                                null,
                                containerSpec,
                                buildId,
                                environment);
                    }
                }
            });
        }
    }

    /**
     * Forgets the environment's finished sandboxes but the {@code kept} (at least 1) that finished last; returns how
     * many it forgot. A sandbox not finished is never forgotten. Deletes a thousand at a time and at most ten thousand, so
     * that a store that kept every sandbox (before this limit) is neither held for one long statement nor keeps a create
     * waiting: the next trims delete the rest.
     */
    public int forgetAllButNewestFinished(String environment, int kept) {
        List<Timestamp> edge = SqlQuery.select(
                db,
                "SELECT finished_at FROM sandbox WHERE environment = ? AND finished_at IS NOT NULL"
                        + " ORDER BY finished_at DESC OFFSET ? ROWS FETCH FIRST 1 ROW ONLY",
                List.of(environment, Math.max(1, kept) - 1),
                rs -> rs.getTimestamp(1),
                "sandboxes");
        if (edge.isEmpty()) {
            return 0;
        }
        int forgotten = 0;
        int batches = 0;
        int n;
        do {
            n = SqlQuery.updateCount(
                    db,
                    "DELETE FROM sandbox WHERE seq IN (SELECT seq FROM sandbox WHERE environment = ?"
                            + " AND finished_at < ? FETCH FIRST 1000 ROWS ONLY)",
                    ps -> {
                        ps.setString(1, environment);
                        ps.setTimestamp(2, edge.get(0));
                    },
                    "forgetting old sandboxes");
            forgotten += n;
        } while (n == 1000 && ++batches < 10); // what is left goes at the next trims, not all in one create
        return forgotten;
    }

    /** Moves a sandbox to a new state; a finished state also records when. */
    public void updateState(String id, SandboxState state, String statusMessage) {
        SqlQuery.update(
                db,
                "UPDATE sandbox SET state = ?, status_message = ?, finished_at = ? WHERE id = ?",
                ps -> {
                    ps.setString(1, state.name());
                    ps.setString(2, fit(statusMessage));
                    ps.setTimestamp(3, state.finished() ? Timestamp.from(Instant.now()) : null);
                    ps.setString(4, id);
                },
                "updating sandbox " + id);
    }

    /** The sandbox with this id, whatever its environment (the server's own bookkeeping). */
    public Optional<SandboxRecord> find(String id) {
        List<SandboxRecord> found = query("SELECT * FROM sandbox WHERE id = ?", List.of(id));
        return found.stream().findFirst();
    }

    /** The sandboxes of an environment created from these image builds, oldest first. */
    public List<SandboxRecord> fromBuilds(String environment, Collection<String> buildIds) {
        if (buildIds.isEmpty()) {
            return List.of();
        }
        List<Object> args = new ArrayList<>(List.of(environment));
        args.addAll(buildIds);
        return query(
                "SELECT * FROM sandbox WHERE environment = ? AND build_id IN (" + placeholders(buildIds.size())
                        + ") ORDER BY seq",
                args);
    }

    /**
     * A page of sandboxes in creation order.
     *
     * @param environment only sandboxes of this environment; empty for every environment's (the server's own work)
     * @param afterSeq   only records after this sequence number (the cursor)
     * @param limit      at most this many
     * @param states     only these states (empty: any)
     * @param notStates  none of these states
     */
    public List<SandboxRecord> list(
            Optional<String> environment,
            long afterSeq,
            int limit,
            Collection<SandboxState> states,
            Collection<SandboxState> notStates) {
        StringBuilder sql = new StringBuilder("SELECT * FROM sandbox WHERE seq > ?");
        List<Object> args = new ArrayList<>();
        args.add(afterSeq);
        environment.ifPresent(e -> {
            sql.append(" AND environment = ?");
            args.add(e);
        });
        if (!states.isEmpty()) {
            sql.append(" AND state IN (").append(placeholders(states.size())).append(')');
            states.forEach(s -> args.add(s.name()));
        }
        if (!notStates.isEmpty()) {
            sql.append(" AND state NOT IN (")
                    .append(placeholders(notStates.size()))
                    .append(')');
            notStates.forEach(s -> args.add(s.name()));
        }
        sql.append(" ORDER BY seq LIMIT ?");
        args.add(limit);
        return query(sql.toString(), args);
    }

    /** A page of sandboxes matching {@code q}; see {@link Query}. */
    public List<SandboxRecord> search(Query q) {
        StringBuilder sql = new StringBuilder("SELECT * FROM sandbox WHERE environment = ?");
        List<Object> args = new ArrayList<>();
        args.add(q.environment());
        if (q.cursor() > 0) {
            sql.append(q.descending() ? " AND seq < ?" : " AND seq > ?");
            args.add(q.cursor());
        }
        if (!q.states().isEmpty()) {
            sql.append(" AND state IN (")
                    .append(placeholders(q.states().size()))
                    .append(')');
            q.states().forEach(s -> args.add(s.name()));
        }
        if (!q.names().isEmpty()) {
            sql.append(" AND name IN (").append(placeholders(q.names().size())).append(')');
            args.addAll(q.names());
        }
        if (!q.images().isEmpty()) {
            sql.append(" AND image IN (")
                    .append(placeholders(q.images().size()))
                    .append(')');
            args.addAll(q.images());
        }
        if (!q.text().isEmpty()) {
            sql.append(" AND (LOWER(id) LIKE ? ESCAPE '\\' OR LOWER(name) LIKE ? ESCAPE '\\')");
            String like = "%" + likeEscape(q.text().toLowerCase(java.util.Locale.ROOT)) + "%";
            args.add(like);
            args.add(like);
        }
        sql.append(" ORDER BY seq ").append(q.descending() ? "DESC" : "ASC").append(" LIMIT ?");
        args.add(q.limit());
        return query(sql.toString(), args);
    }

    /**
     * The container specs of the environment's sandboxes that have not finished (starting, running or suspended), as
     * {@link SandboxRecord#containerSpec()} holds them; records without one are left out.
     */
    public List<byte[]> unfinishedSpecs(String environment) {
        List<SandboxState> finished = Arrays.stream(SandboxState.values())
                .filter(SandboxState::finished)
                .toList();
        List<Object> args = new ArrayList<>(List.of(environment));
        finished.forEach(s -> args.add(s.name()));
        return SqlQuery.select(
                db,
                "SELECT spec FROM sandbox WHERE environment = ? AND spec IS NOT NULL AND state NOT IN ("
                        + placeholders(finished.size()) + ")",
                args,
                rs -> rs.getBytes(1),
                "sandbox specs");
    }

    /**
     * The container specs of the environment's sandboxes created at or after {@code since}, finished or not, each with
     * when its sandbox was created; records without one are left out.
     */
    public List<Map.Entry<Instant, byte[]>> specsCreatedSince(String environment, Instant since) {
        return SqlQuery.select(
                db,
                "SELECT created_at, spec FROM sandbox WHERE environment = ? AND created_at >= ? AND spec IS NOT NULL",
                List.of(environment, Timestamp.from(since)),
                rs -> Map.entry(rs.getTimestamp(1).toInstant(), rs.getBytes(2)),
                "sandbox specs");
    }

    /** Counts an environment's sandboxes in a state, for the server info its clients see. */
    public long count(String environment, SandboxState state) {
        return db.read("counting sandboxes", c -> {
            try (PreparedStatement ps =
                    c.prepareStatement("SELECT COUNT(*) FROM sandbox WHERE environment = ? AND state = ?")) {
                ps.setString(1, environment);
                ps.setString(2, state.name());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    /** Counts sandboxes by state, for health. */
    public long count(SandboxState state) {
        return db.read("counting sandboxes", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM sandbox WHERE state = ?")) {
                ps.setString(1, state.name());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    private List<SandboxRecord> query(String sql, List<?> args) {
        return SqlQuery.select(db, sql, args, SandboxStore::read, "sandboxes");
    }

    private static SandboxRecord read(ResultSet rs) throws SQLException {
        Timestamp finished = rs.getTimestamp("finished_at");
        return new SandboxRecord(
                rs.getLong("seq"),
                rs.getString("id"),
                Optional.ofNullable(rs.getString("name")),
                SandboxState.valueOf(rs.getString("state")),
                rs.getString("image"),
                rs.getString("runtime"),
                rs.getTimestamp("created_at").toInstant(),
                Optional.ofNullable(finished).map(Timestamp::toInstant),
                Optional.ofNullable(rs.getString("status_message")),
                rs.getBytes("request"),
                rs.getBytes("spec"),
                Optional.ofNullable(rs.getString("build_id")),
                rs.getString("environment"));
    }
}
