package ai.chalk.compute.server.store;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Functions and their immutable versions in the embedded database. A version keeps the whole request that created
 * it (the protocol compares requests to reuse a version) and the scaling-group revision that runs it; a function
 * points at its current version.
 */
public final class FunctionStore {

    /**
     * A function.
     *
     * @param seq              insertion order, the list cursor
     * @param id               its id
     * @param name             its name, unique among its environment's live functions
     * @param currentVersionId the version its traffic goes to, once it has one
     * @param createdAt        when it was created
     * @param updatedAt        when its current version last changed
     * @param deletedAt        when it was deleted
     * @param environment      the environment it belongs to; its versions, replicas and calls are that environment's
     */
    public record FunctionRecord(
            long seq,
            String id,
            String name,
            Optional<String> currentVersionId,
            Instant createdAt,
            Instant updatedAt,
            Optional<Instant> deletedAt,
            String environment) {}

    /**
     * A version of a function.
     *
     * @param seq        insertion order, the list cursor
     * @param id         its id
     * @param functionId the function's id
     * @param version    its number within the function, from 1
     * @param request    the {@code CreateExternalFunctionVersionRequest} that created it, deterministically serialised
     * @param revisionId the scaling-group revision that runs it
     * @param createdAt  when it was created
     * @param deletedAt  when it was deleted
     * @param environment its function's environment
     */
    public record VersionRecord(
            long seq,
            String id,
            String functionId,
            int version,
            byte[] request,
            String revisionId,
            Instant createdAt,
            Optional<Instant> deletedAt,
            String environment) {}

    /** Every column but {@code request}, which is read once per version: H2 copies a BLOB on each read. */
    private static final String VERSION_COLUMNS =
            "seq, id, function_id, version, revision_id, created_at, deleted_at," + " environment";

    private static final int CACHED_REQUESTS = 256;

    private final Database db;
    /** Versions' requests by version id; a version never changes, so a cached request never goes stale. */
    private final Map<String, byte[]> requests = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, byte[]> eldest) {
            return size() > CACHED_REQUESTS;
        }
    };

    private static final int CACHED_LOOKUPS = 1024;

    /**
     * Lookups every call of a function repeats (its function by id or name, its version by number), each tagged with the
     * count of this store's writes when it was read: a write makes them all stale. Every write of these tables goes
     * through this store (one server owns its database), so a warm call reads no row.
     */
    private final Map<String, Cached> lookups = new ConcurrentHashMap<>();

    private final AtomicLong writes = new AtomicLong();

    private record Cached(long writes, Optional<?> value) {}

    public FunctionStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS ext_function (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  name VARCHAR(255) NOT NULL,
                  current_version_id VARCHAR(64),
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  deleted_at TIMESTAMP WITH TIME ZONE)""");
        db.execute("CREATE INDEX IF NOT EXISTS ext_function_name ON ext_function (name, seq)");
        db.execute("""
                CREATE TABLE IF NOT EXISTS ext_function_version (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  function_id VARCHAR(64) NOT NULL,
                  version INT NOT NULL,
                  request BLOB NOT NULL,
                  revision_id VARCHAR(64) NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  deleted_at TIMESTAMP WITH TIME ZONE,
                  UNIQUE (function_id, version))""");
        db.environmentColumn("ext_function");
        db.environmentColumn("ext_function_version");
        db.execute("CREATE INDEX IF NOT EXISTS ext_function_environment ON ext_function (environment, name, seq)");
        db.execute("CREATE INDEX IF NOT EXISTS ext_function_version_environment ON ext_function_version"
                + " (environment, seq)");
    }

    /** Records a new function of the environment without a version yet. */
    public FunctionRecord insertFunction(String environment, String id, String name, Instant at) {
        SqlQuery.update(
                db,
                "INSERT INTO ext_function (id, name, created_at, updated_at, environment)" + " VALUES (?,?,?,?,?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, name);
                    ps.setTimestamp(3, Timestamp.from(at));
                    ps.setTimestamp(4, Timestamp.from(at));
                    ps.setString(5, environment);
                },
                "saving function " + name);
        written();
        return function(id).orElseThrow();
    }

    /** Records a new version (number {@code version}) and makes it the function's current one. */
    public VersionRecord insertVersion(
            FunctionRecord function, String id, int version, byte[] request, String revisionId, Instant at) {
        String functionId = function.id();
        SqlQuery.update(
                db,
                "INSERT INTO ext_function_version (id, function_id, version, request, revision_id,"
                        + " created_at, environment) VALUES (?,?,?,?,?,?,?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, functionId);
                    ps.setInt(3, version);
                    ps.setBytes(4, request);
                    ps.setString(5, revisionId);
                    ps.setTimestamp(6, Timestamp.from(at));
                    ps.setString(7, function.environment());
                },
                "saving version " + version + " of function " + functionId);
        written();
        setCurrent(functionId, id, at);
        return version(id).orElseThrow();
    }

    /** Routes a function's traffic to one of its versions. */
    public void setCurrent(String functionId, String versionId, Instant at) {
        SqlQuery.update(
                db,
                "UPDATE ext_function SET current_version_id = ?, updated_at = ? WHERE id = ?",
                ps -> {
                    ps.setString(1, versionId);
                    ps.setTimestamp(2, Timestamp.from(at));
                    ps.setString(3, functionId);
                },
                "routing function " + functionId);
        written();
    }

    /** Marks a function and its versions deleted. */
    public void deleteFunction(String functionId, Instant at) {
        SqlQuery.update(
                db,
                "UPDATE ext_function SET deleted_at = ? WHERE id = ?",
                ps -> {
                    ps.setTimestamp(1, Timestamp.from(at));
                    ps.setString(2, functionId);
                },
                "deleting function " + functionId);
        written();
        SqlQuery.update(
                db,
                "UPDATE ext_function_version SET deleted_at = ? WHERE function_id = ?" + " AND deleted_at IS NULL",
                ps -> {
                    ps.setTimestamp(1, Timestamp.from(at));
                    ps.setString(2, functionId);
                },
                "deleting the versions of function " + functionId);
        written();
    }

    /** Marks one version deleted. */
    public void deleteVersion(String versionId, Instant at) {
        SqlQuery.update(
                db,
                "UPDATE ext_function_version SET deleted_at = ? WHERE id = ?",
                ps -> {
                    ps.setTimestamp(1, Timestamp.from(at));
                    ps.setString(2, versionId);
                },
                "deleting function version " + versionId);
        written();
    }

    /** Counted after the row changed: a lookup read before then is stale from now on. */
    private void written() {
        writes.incrementAndGet();
    }

    /** A lookup from {@link #lookups}, read with {@code query} when missing or stale. */
    @SuppressWarnings("unchecked")
    private <T> Optional<T> cached(String key, java.util.function.Supplier<Optional<T>> query) {
        long now = writes.get(); // before the query: a write during it makes what it read stale
        Cached c = lookups.get(key);
        if (c != null && c.writes() == now) {
            return (Optional<T>) c.value();
        }
        Optional<T> value = query.get();
        if (lookups.size() >= CACHED_LOOKUPS) {
            lookups.clear(); // many functions called: start over rather than keep them all
        }
        lookups.put(key, new Cached(now, value));
        return value;
    }

    /** The function with this id, whatever its environment (callers check it). */
    public Optional<FunctionRecord> function(String id) {
        return cached(
                "function " + id,
                () -> functions("SELECT * FROM ext_function WHERE id = ?", List.of(id)).stream()
                        .findFirst());
    }

    /**
     * The environment's live (not deleted) function of this name; read from memory between writes, as a call that
     * names its function (the protocol's other clients do) repeats it.
     */
    public Optional<FunctionRecord> liveFunctionNamed(String environment, String name) {
        return cached(
                "named " + environment + "\n" + name, // a newline is in neither, so no two pairs give one key
                () -> functions(
                                "SELECT * FROM ext_function WHERE environment = ? AND name = ? AND deleted_at IS NULL"
                                        + " ORDER BY seq DESC LIMIT 1",
                                List.of(environment, name))
                        .stream()
                        .findFirst());
    }

    /**
     * A page of the environment's functions in creation order, after the cursor {@code afterSeq}, whose names contain
     * {@code search}.
     */
    public List<FunctionRecord> listFunctions(
            String environment, long afterSeq, int limit, boolean includeDeleted, String search) {
        return functions(
                "SELECT * FROM ext_function WHERE environment = ? AND seq > ? AND name LIKE ? ESCAPE '\\'"
                        + (includeDeleted ? "" : " AND deleted_at IS NULL") + " ORDER BY seq LIMIT ?",
                List.of(environment, afterSeq, "%" + SqlQuery.likeEscape(search) + "%", limit));
    }

    /** The version with this id, whatever its environment (callers check it). */
    public Optional<VersionRecord> version(String id) {
        return versions("SELECT " + VERSION_COLUMNS + " FROM ext_function_version WHERE id = ?", List.of(id)).stream()
                .findFirst();
    }

    /** A function's version by number. */
    public Optional<VersionRecord> version(String functionId, int version) {
        return cached(
                "version " + functionId + " " + version,
                () -> versions(
                                "SELECT " + VERSION_COLUMNS + " FROM ext_function_version WHERE function_id = ?"
                                        + " AND version = ?",
                                List.of(functionId, version))
                        .stream()
                        .findFirst());
    }

    /** The version a scaling-group revision runs. */
    public Optional<VersionRecord> versionForRevision(String revisionId) {
        return versions(
                        "SELECT " + VERSION_COLUMNS + " FROM ext_function_version WHERE revision_id = ?",
                        List.of(revisionId))
                .stream()
                .findFirst();
    }

    /** The highest version number of a function; 0 when it has none. */
    public int highestVersion(String functionId) {
        return SqlQuery.select(
                        db,
                        "SELECT COALESCE(MAX(version), 0) FROM ext_function_version WHERE function_id = ?",
                        List.of(functionId),
                        rs -> rs.getInt(1),
                        "function versions")
                .get(0);
    }

    /** A page of the environment's versions in creation order, of one function or (functionId empty) of all. */
    public List<VersionRecord> listVersions(
            String environment,
            Optional<String> functionId,
            List<String> ids,
            long afterSeq,
            int limit,
            boolean includeDeleted) {
        StringBuilder sql = new StringBuilder(
                "SELECT " + VERSION_COLUMNS + " FROM ext_function_version" + " WHERE environment = ? AND seq > ?");
        List<Object> args = new ArrayList<>(List.of(environment, afterSeq));
        functionId.ifPresent(f -> {
            sql.append(" AND function_id = ?");
            args.add(f);
        });
        if (!ids.isEmpty()) {
            sql.append(" AND id IN (").append(SqlQuery.placeholders(ids.size())).append(")");
            args.addAll(ids);
        }
        if (!includeDeleted) {
            sql.append(" AND deleted_at IS NULL");
        }
        sql.append(" ORDER BY seq LIMIT ?");
        args.add(limit);
        return versions(sql.toString(), args);
    }

    /** The requests of the environment's versions that are not deleted (any of them can serve again). */
    public List<byte[]> liveVersionRequests(String environment) {
        return SqlQuery.select(
                db,
                "SELECT request FROM ext_function_version WHERE environment = ? AND deleted_at IS NULL",
                List.of(environment),
                rs -> rs.getBytes(1),
                "function version requests");
    }

    /** Gives {@code use} the environment and request of each version of every environment that is not deleted. */
    public void eachLiveVersionRequest(java.util.function.BiConsumer<String, byte[]> use) {
        for (Map.Entry<String, byte[]> row : SqlQuery.select(
                db,
                "SELECT environment, request FROM ext_function_version WHERE deleted_at IS NULL",
                List.of(),
                rs -> Map.entry(rs.getString(1), rs.getBytes(2)),
                "function version requests")) {
            use.accept(row.getKey(), row.getValue());
        }
    }

    /** The requests of the environment's versions created at or after {@code since}, deleted or not, with when. */
    public List<Map.Entry<Instant, byte[]>> versionRequestsCreatedSince(String environment, Instant since) {
        return SqlQuery.select(
                db,
                "SELECT created_at, request FROM ext_function_version WHERE environment = ? AND created_at >= ?",
                List.of(environment, Timestamp.from(since)),
                rs -> Map.entry(rs.getTimestamp(1).toInstant(), rs.getBytes(2)),
                "function version requests");
    }

    /** The scaling-group revisions of the environment's deleted versions: they never serve again. */
    public Set<String> deletedVersionRevisions(String environment) {
        return new HashSet<>(SqlQuery.select(
                db,
                "SELECT revision_id FROM ext_function_version WHERE environment = ? AND deleted_at IS NOT NULL",
                List.of(environment),
                rs -> rs.getString(1),
                "function versions"));
    }

    private List<FunctionRecord> functions(String sql, List<?> args) {
        return SqlQuery.select(db, sql, args, FunctionStore::readFunction, "functions");
    }

    private List<VersionRecord> versions(String sql, List<?> args) {
        List<VersionRecord> found = SqlQuery.select(db, sql, args, FunctionStore::readVersion, "function versions");
        Map<String, byte[]> request =
                requests(found.stream().map(VersionRecord::id).toList());
        return found.stream()
                .map(v -> new VersionRecord(
                        v.seq(),
                        v.id(),
                        v.functionId(),
                        v.version(),
                        request.get(v.id()).clone(),
                        v.revisionId(),
                        v.createdAt(),
                        v.deletedAt(),
                        v.environment()))
                .toList();
    }

    /** The requests of versions (rows are never removed, so all are there), from the cache or else in one query. */
    private Map<String, byte[]> requests(List<String> versionIds) {
        Map<String, byte[]> out = new HashMap<>();
        synchronized (requests) {
            versionIds.forEach(id -> {
                byte[] cached = requests.get(id);
                if (cached != null) {
                    out.put(id, cached);
                }
            });
        }
        List<String> missing =
                versionIds.stream().filter(id -> !out.containsKey(id)).toList();
        if (!missing.isEmpty()) {
            SqlQuery.select(
                            db,
                            "SELECT id, request FROM ext_function_version WHERE id IN ("
                                    + SqlQuery.placeholders(missing.size()) + ")",
                            missing,
                            rs -> Map.entry(rs.getString(1), rs.getBytes(2)),
                            "function version requests")
                    .forEach(e -> out.put(e.getKey(), e.getValue()));
            synchronized (requests) {
                missing.stream().filter(out::containsKey).forEach(id -> requests.put(id, out.get(id)));
            }
        }
        return out;
    }

    private static FunctionRecord readFunction(ResultSet rs) throws SQLException {
        return new FunctionRecord(
                rs.getLong("seq"),
                rs.getString("id"),
                rs.getString("name"),
                Optional.ofNullable(rs.getString("current_version_id")),
                rs.getTimestamp("created_at").toInstant(),
                rs.getTimestamp("updated_at").toInstant(),
                instant(rs, "deleted_at"),
                rs.getString("environment"));
    }

    private static VersionRecord readVersion(ResultSet rs) throws SQLException {
        return new VersionRecord(
                rs.getLong("seq"),
                rs.getString("id"),
                rs.getString("function_id"),
                rs.getInt("version"),
                null,
                rs.getString("revision_id"),
                rs.getTimestamp("created_at").toInstant(),
                instant(rs, "deleted_at"),
                rs.getString("environment"));
    }

    static Optional<Instant> instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return Optional.ofNullable(t).map(Timestamp::toInstant);
    }
}
