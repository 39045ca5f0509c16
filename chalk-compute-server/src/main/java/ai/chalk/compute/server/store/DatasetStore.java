package ai.chalk.compute.server.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BiConsumer;

/**
 * Datasets, their revisions and their upload sessions. A dataset is a stable parent (id, environment, a name unique in
 * it); a revision is immutable once {@link RevisionStatus#COMPLETED}: its Parquet files are blobs listed in
 * {@code dataset_file}. An upload session collects objects (each one PUT through a signed link) until it is finalized
 * into a revision.
 *
 * <p>What a restart interrupted is never left half-visible: {@link #recover} fails every open session and every revision
 * still {@link RevisionStatus#WORKING}, saying why.
 */
public final class DatasetStore {

    /** A revision's state. */
    public enum RevisionStatus {
        /** Its files are being checked and converted; not readable yet. */
        WORKING,
        /** Its files are in place and readable. */
        COMPLETED,
        /** It will never be readable; {@link RevisionRecord#message()} says why. */
        FAILED
    }

    /** A dataset as recorded. */
    public record DatasetRecord(String id, long seq, String environment, String name, Instant createdAt) {}

    /** A column of a revision's files: its name and its type as the engine names it ({@code BIGINT}, ...). */
    public record DatasetColumn(String name, String type) {}

    /** A revision as recorded. */
    public record RevisionRecord(
            String id,
            long numericId,
            String datasetId,
            String environment,
            RevisionStatus status,
            String message,
            long numRows,
            long sizeBytes,
            int numFiles,
            List<DatasetColumn> columns,
            byte[] arrowSchema,
            Instant createdAt,
            Instant completedAt,
            Instant archivedAt) {

        /** This revision with {@code schema} as its Arrow schema (one read by a listing, which reads none). */
        public RevisionRecord withArrowSchema(byte[] schema) {
            return new RevisionRecord(
                    id,
                    numericId,
                    datasetId,
                    environment,
                    status,
                    message,
                    numRows,
                    sizeBytes,
                    numFiles,
                    columns,
                    schema,
                    createdAt,
                    completedAt,
                    archivedAt);
        }
    }

    /**
     * A revision's columns but its Arrow schema (up to a MiB): listings read the schemas one by one, as their answer
     * has room for them ({@link #arrowSchema}), not a page of a thousand at once.
     */
    private static final String REVISION_WITHOUT_SCHEMA = "id, numeric_id, dataset_id, environment, status, message,"
            + " num_rows, size_bytes, num_files, columns_json, created_at, completed_at, archived_at";

    /** One Parquet file of a revision: the blob (hex digest) holding it. */
    public record FileRecord(int ordinal, String digestHex, long size, long rows) {}

    /** An upload session. */
    public record SessionRecord(String id, String environment, String state, String message, Instant createdAt) {
        /** Objects may still be added and uploaded. */
        public static final String OPEN = "OPEN";
        /** Made into a revision. */
        public static final String FINALIZED = "FINALIZED";
        /** Ended without a revision; {@link #message()} says why. */
        public static final String FAILED = "FAILED";
    }

    /** One object of an upload session: its announced size and hash, and the blob once uploaded. */
    public record ObjectRecord(
            String id,
            String sessionId,
            String environment,
            int ordinal,
            long size,
            String announcedHex,
            String digestHex) {
        /** Whether its bytes arrived. */
        public boolean uploaded() {
            return digestHex != null;
        }
    }

    /** What {@link #beginRevision} made: the dataset (new or existing) and the WORKING revision. */
    public record Begun(DatasetRecord dataset, boolean datasetCreated, String revisionId) {}

    /** Listing filters of {@link #datasets}. */
    public record DatasetQuery(
            String search, List<String> ids, List<RevisionStatus> statuses, boolean ascending, long after, int limit) {}

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String INTERRUPTED_SESSION = "the server restarted while this upload session was open; the"
            + " files uploaded to it are discarded: upload them again in a new session";
    private static final String INTERRUPTED_REVISION = "the server restarted while this revision was being finalized"
            + " (its files checked and converted to Parquet); it has no readable files: upload again";

    private final Database db;

    public DatasetStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS dataset (
                  id VARCHAR(40) PRIMARY KEY,
                  seq BIGINT GENERATED BY DEFAULT AS IDENTITY UNIQUE,
                  environment VARCHAR(64) NOT NULL,
                  name VARCHAR(256) NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  UNIQUE (environment, name))""");
        db.execute("""
                CREATE TABLE IF NOT EXISTS dataset_revision (
                  id VARCHAR(40) PRIMARY KEY,
                  numeric_id BIGINT GENERATED BY DEFAULT AS IDENTITY UNIQUE,
                  dataset_id VARCHAR(40) NOT NULL,
                  environment VARCHAR(64) NOT NULL,
                  status VARCHAR(16) NOT NULL,
                  message VARCHAR(4096),
                  num_rows BIGINT NOT NULL DEFAULT 0,
                  size_bytes BIGINT NOT NULL DEFAULT 0,
                  num_files INT NOT NULL DEFAULT 0,
                  columns_json CLOB,
                  arrow_schema VARBINARY(1048576),
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  completed_at TIMESTAMP WITH TIME ZONE,
                  archived_at TIMESTAMP WITH TIME ZONE)""");
        db.execute("CREATE INDEX IF NOT EXISTS dataset_revision_by_dataset ON dataset_revision (dataset_id)");
        db.execute("""
                CREATE TABLE IF NOT EXISTS dataset_file (
                  revision_id VARCHAR(40) NOT NULL,
                  ordinal INT NOT NULL,
                  digest VARCHAR(64) NOT NULL,
                  size BIGINT NOT NULL,
                  num_rows BIGINT NOT NULL,
                  PRIMARY KEY (revision_id, ordinal))""");
        db.execute("""
                CREATE TABLE IF NOT EXISTS dataset_upload_session (
                  id VARCHAR(40) PRIMARY KEY,
                  environment VARCHAR(64) NOT NULL,
                  state VARCHAR(16) NOT NULL,
                  message VARCHAR(4096),
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");
        db.execute("""
                CREATE TABLE IF NOT EXISTS dataset_upload_object (
                  id VARCHAR(40) PRIMARY KEY,
                  session_id VARCHAR(40) NOT NULL,
                  ordinal INT NOT NULL,
                  size BIGINT NOT NULL,
                  announced VARCHAR(64),
                  digest VARCHAR(64),
                  UNIQUE (session_id, ordinal))""");
    }

    /**
     * Gives {@code use} the environment and digest (hex) of each blob that a revision's files or an open upload's
     * objects refer to: those blobs are never collected.
     */
    public void eachBlob(BiConsumer<String, String> use) {
        List<String[]> refs = new ArrayList<>(SqlQuery.select(
                db,
                "SELECT r.environment, f.digest FROM dataset_file f JOIN dataset_revision r ON r.id = f.revision_id",
                List.of(),
                rs -> new String[] {rs.getString(1), rs.getString(2)},
                "dataset files"));
        refs.addAll(SqlQuery.select(
                db,
                "SELECT s.environment, o.digest FROM dataset_upload_object o"
                        + " JOIN dataset_upload_session s ON s.id = o.session_id WHERE s.state = 'OPEN'",
                List.of(),
                rs -> new String[] {rs.getString(1), rs.getString(2)},
                "dataset uploads"));
        refs.stream().filter(r -> r[1] != null).forEach(r -> use.accept(r[0], r[1]));
    }

    /**
     * Fails what a previous run left unfinished: open sessions and WORKING revisions. Returns how many of each, for
     * the start log.
     */
    public int[] recover() {
        int sessions = SqlQuery.updateCount(
                db,
                "UPDATE dataset_upload_session SET state = 'FAILED', message = ? WHERE state = 'OPEN'",
                ps -> ps.setString(1, INTERRUPTED_SESSION),
                "failing interrupted upload sessions");
        int revisions = SqlQuery.updateCount(
                db,
                "UPDATE dataset_revision SET status = 'FAILED', message = ? WHERE status = 'WORKING'",
                ps -> ps.setString(1, INTERRUPTED_REVISION),
                "failing interrupted dataset revisions");
        return new int[] {sessions, revisions};
    }

    // ---------------------------------------------------------------------------------------------------------------
    // upload sessions

    /** Records a new open session. */
    public SessionRecord openSession(String environment, String id, Instant at) {
        SqlQuery.update(
                db,
                "INSERT INTO dataset_upload_session (id, environment, state, created_at) VALUES (?, ?, 'OPEN', ?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, environment);
                    ps.setTimestamp(3, Timestamp.from(at));
                },
                "opening an upload session");
        return new SessionRecord(id, environment, SessionRecord.OPEN, null, at);
    }

    /** The environment's session with this id. */
    public Optional<SessionRecord> session(String environment, String id) {
        return SqlQuery.select(
                        db,
                        "SELECT * FROM dataset_upload_session WHERE environment = ? AND id = ?",
                        List.of(environment, id),
                        rs -> new SessionRecord(
                                rs.getString("id"),
                                rs.getString("environment"),
                                rs.getString("state"),
                                rs.getString("message"),
                                instant(rs, "created_at")),
                        "upload sessions")
                .stream()
                .findFirst();
    }

    /**
     * Adds an object to an open session; returns its ordinal, or empty when the session is no longer open or already
     * has {@code maxObjects}.
     */
    public Optional<Integer> addObject(
            String sessionId, String objectId, long size, String announcedHex, int maxObjects) {
        synchronized (db) {
            return db.write("adding an object to upload session " + sessionId, c -> {
                String state = single(c, "SELECT state FROM dataset_upload_session WHERE id = ?", sessionId);
                if (!SessionRecord.OPEN.equals(state)) {
                    return Optional.empty();
                }
                int count = Integer.parseInt(
                        single(c, "SELECT COUNT(*) FROM dataset_upload_object WHERE session_id = ?", sessionId));
                if (count >= maxObjects) {
                    return Optional.empty();
                }
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO dataset_upload_object"
                        + " (id, session_id, ordinal, size, announced) VALUES (?, ?, ?, ?, ?)")) {
                    ps.setString(1, objectId);
                    ps.setString(2, sessionId);
                    ps.setInt(3, count);
                    ps.setLong(4, size);
                    ps.setString(5, announcedHex);
                    ps.executeUpdate();
                }
                return Optional.of(count);
            });
        }
    }

    /** An object with its session's environment and state, whoever asks (a signed link is its own authority). */
    public Optional<ObjectWithSession> object(String objectId) {
        return SqlQuery.select(
                        db,
                        "SELECT o.*, s.environment, s.state, s.message FROM dataset_upload_object o"
                                + " JOIN dataset_upload_session s ON s.id = o.session_id WHERE o.id = ?",
                        List.of(objectId),
                        rs -> new ObjectWithSession(object(rs), rs.getString("state"), rs.getString("message")),
                        "upload objects")
                .stream()
                .findFirst();
    }

    /** An object and the state of its session. */
    public record ObjectWithSession(ObjectRecord object, String sessionState, String sessionMessage) {}

    /** Records an object's bytes; false when it was uploaded already or its session is no longer open. */
    public boolean objectUploaded(String objectId, String digestHex) {
        return SqlQuery.updateCount(
                        db,
                        "UPDATE dataset_upload_object SET digest = ? WHERE id = ? AND digest IS NULL AND session_id IN"
                                + " (SELECT id FROM dataset_upload_session WHERE state = 'OPEN')",
                        ps -> {
                            ps.setString(1, digestHex);
                            ps.setString(2, objectId);
                        },
                        "recording upload " + objectId)
                == 1;
    }

    /** A session's objects in the order they were added. */
    public List<ObjectRecord> objects(String sessionId) {
        return SqlQuery.select(
                db,
                "SELECT o.*, s.environment FROM dataset_upload_object o JOIN dataset_upload_session s"
                        + " ON s.id = o.session_id WHERE o.session_id = ? ORDER BY o.ordinal",
                List.of(sessionId),
                DatasetStore::object,
                "upload objects");
    }

    /** Marks a session FAILED, saying why: it made no revision (its files were refused). */
    public void failSession(String sessionId, String message) {
        SqlQuery.update(
                db,
                "UPDATE dataset_upload_session SET state = 'FAILED', message = ? WHERE id = ?",
                ps -> {
                    ps.setString(1, SqlQuery.fit(message));
                    ps.setString(2, sessionId);
                },
                "failing upload session " + sessionId);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // revisions

    /**
     * In one transaction: closes the open session, finds or creates the dataset {@code name} and adds a WORKING
     * revision to it. Empty when the session is not open (finalized or failed meanwhile).
     */
    public Optional<Begun> beginRevision(
            String environment, String sessionId, String name, String newDatasetId, String revisionId, Instant at) {
        synchronized (db) {
            return db.write("starting a revision of dataset " + name, c -> {
                boolean autoCommit = c.getAutoCommit();
                c.setAutoCommit(false); // the session closes exactly when its revision appears
                try {
                    int closed;
                    try (PreparedStatement ps = c.prepareStatement("UPDATE dataset_upload_session SET state ="
                            + " 'FINALIZED' WHERE id = ? AND environment = ? AND state = 'OPEN'")) {
                        ps.setString(1, sessionId);
                        ps.setString(2, environment);
                        closed = ps.executeUpdate();
                    }
                    if (closed != 1) {
                        c.rollback();
                        return Optional.<Begun>empty();
                    }
                    Optional<DatasetRecord> existing =
                            datasetWhere(c, "environment = ? AND name = ?", environment, name);
                    boolean created = existing.isEmpty();
                    if (created) {
                        try (PreparedStatement ps = c.prepareStatement(
                                "INSERT INTO dataset (id, environment, name, created_at) VALUES (?, ?, ?, ?)")) {
                            ps.setString(1, newDatasetId);
                            ps.setString(2, environment);
                            ps.setString(3, name);
                            ps.setTimestamp(4, Timestamp.from(at));
                            ps.executeUpdate();
                        }
                    }
                    DatasetRecord dataset = datasetWhere(c, "environment = ? AND name = ?", environment, name)
                            .orElseThrow();
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO dataset_revision"
                            + " (id, dataset_id, environment, status, created_at) VALUES (?, ?, ?, 'WORKING', ?)")) {
                        ps.setString(1, revisionId);
                        ps.setString(2, dataset.id());
                        ps.setString(3, environment);
                        ps.setTimestamp(4, Timestamp.from(at));
                        ps.executeUpdate();
                    }
                    c.commit();
                    return Optional.of(new Begun(dataset, created, revisionId));
                } catch (SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                } finally {
                    c.setAutoCommit(autoCommit);
                }
            });
        }
    }

    /** Makes a WORKING revision COMPLETED with its files, in one transaction. */
    public void completeRevision(
            String revisionId, List<FileRecord> files, List<DatasetColumn> columns, byte[] arrowSchema, Instant at) {
        long rows = files.stream().mapToLong(FileRecord::rows).sum();
        long bytes = files.stream().mapToLong(FileRecord::size).sum();
        String columnsJson = json(columns);
        synchronized (db) {
            db.write("completing revision " + revisionId, c -> {
                boolean autoCommit = c.getAutoCommit();
                c.setAutoCommit(false); // the files appear with the status that makes them readable
                try {
                    try (PreparedStatement ps = c.prepareStatement(
                            "INSERT INTO dataset_file (revision_id, ordinal, digest, size, num_rows) VALUES (?, ?, ?, ?, ?)")) {
                        for (FileRecord f : files) {
                            ps.setString(1, revisionId);
                            ps.setInt(2, f.ordinal());
                            ps.setString(3, f.digestHex());
                            ps.setLong(4, f.size());
                            ps.setLong(5, f.rows());
                            ps.executeUpdate();
                        }
                    }
                    try (PreparedStatement ps = c.prepareStatement("UPDATE dataset_revision SET status = 'COMPLETED',"
                            + " num_rows = ?, size_bytes = ?, num_files = ?, columns_json = ?, arrow_schema = ?,"
                            + " completed_at = ? WHERE id = ? AND status = 'WORKING'")) {
                        ps.setLong(1, rows);
                        ps.setLong(2, bytes);
                        ps.setInt(3, files.size());
                        ps.setString(4, columnsJson);
                        ps.setBytes(5, arrowSchema);
                        ps.setTimestamp(6, Timestamp.from(at));
                        ps.setString(7, revisionId);
                        if (ps.executeUpdate() != 1) {
                            throw new SQLException("revision " + revisionId + " is no longer WORKING", "42000");
                        }
                    }
                    c.commit();
                    return null;
                } catch (SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                } finally {
                    c.setAutoCommit(autoCommit);
                }
            });
        }
    }

    /** Marks a WORKING revision FAILED, saying why. */
    public void failRevision(String revisionId, String message, Instant at) {
        SqlQuery.update(
                db,
                "UPDATE dataset_revision SET status = 'FAILED', message = ?, completed_at = ? WHERE id = ?"
                        + " AND status = 'WORKING'",
                ps -> {
                    ps.setString(1, SqlQuery.fit(message));
                    ps.setTimestamp(2, Timestamp.from(at));
                    ps.setString(3, revisionId);
                },
                "failing revision " + revisionId);
    }

    /**
     * Removes a WORKING revision whose files were refused (the user's error, reported to them), and its dataset when it
     * was made for it and has no other revision.
     */
    public void discardRevision(String revisionId, String datasetId, boolean datasetCreated) {
        synchronized (db) {
            SqlQuery.update(
                    db,
                    "DELETE FROM dataset_revision WHERE id = ? AND status = 'WORKING'",
                    ps -> ps.setString(1, revisionId),
                    "discarding revision " + revisionId);
            if (datasetCreated) {
                SqlQuery.update(
                        db,
                        "DELETE FROM dataset WHERE id = ? AND NOT EXISTS"
                                + " (SELECT 1 FROM dataset_revision WHERE dataset_id = ?)",
                        ps -> {
                            ps.setString(1, datasetId);
                            ps.setString(2, datasetId);
                        },
                        "discarding dataset " + datasetId);
            }
        }
    }

    /** The environment's revision with this id, archived or not. */
    public Optional<RevisionRecord> revision(String environment, String id) {
        return revisions(
                        "SELECT * FROM dataset_revision WHERE environment = ? AND id = ?",
                        List.of(environment, id),
                        true)
                .stream()
                .findFirst();
    }

    /** A revision's files in order. */
    public List<FileRecord> files(String revisionId) {
        return SqlQuery.select(
                db,
                "SELECT * FROM dataset_file WHERE revision_id = ? ORDER BY ordinal",
                List.of(revisionId),
                rs -> new FileRecord(
                        rs.getInt("ordinal"), rs.getString("digest"), rs.getLong("size"), rs.getLong("num_rows")),
                "dataset files");
    }

    /**
     * A dataset's revisions, newest first, after the revision numbered {@code before} (0: from the newest), at most
     * {@code limit}; without their Arrow schemas (null).
     */
    public List<RevisionRecord> revisionsOf(
            String datasetId, boolean includeArchived, Instant from, Instant to, long before, int limit) {
        StringBuilder sql =
                new StringBuilder("SELECT " + REVISION_WITHOUT_SCHEMA + " FROM dataset_revision WHERE dataset_id = ?");
        List<Object> args = new ArrayList<>(List.of(datasetId));
        if (!includeArchived) {
            sql.append(" AND archived_at IS NULL");
        }
        if (from != null) {
            sql.append(" AND created_at >= ?");
            args.add(Timestamp.from(from));
        }
        if (to != null) {
            sql.append(" AND created_at < ?");
            args.add(Timestamp.from(to));
        }
        if (before > 0) {
            sql.append(" AND numeric_id < ?");
            args.add(before);
        }
        sql.append(" ORDER BY numeric_id DESC LIMIT ?");
        args.add(limit);
        return revisions(sql.toString(), args, false);
    }

    /**
     * The ids of a dataset's completed revisions that are not archived, newest first, at most {@code limit}: without
     * their schemas and columns (up to a MiB each), which SQL reads only for the tables it is asked to describe.
     */
    public List<String> completedRevisionIds(String datasetId, int limit) {
        return SqlQuery.select(
                db,
                "SELECT id FROM dataset_revision WHERE dataset_id = ? AND status = 'COMPLETED' AND archived_at IS NULL"
                        + " ORDER BY numeric_id DESC LIMIT ?",
                List.of(datasetId, limit),
                rs -> rs.getString("id"),
                "dataset revisions");
    }

    /**
     * A revision's serialized Arrow schema; empty when it has none, or there is no such revision (a dataset deleted
     * since its revisions were listed: GetTables then lists the revision without a schema).
     */
    public byte[] arrowSchema(String revisionId) {
        List<byte[]> schema = SqlQuery.select(
                db,
                "SELECT arrow_schema FROM dataset_revision WHERE id = ?",
                List.of(revisionId),
                rs -> rs.getBytes("arrow_schema"),
                "a dataset revision's schema");
        return schema.isEmpty() || schema.get(0) == null ? new byte[0] : schema.get(0);
    }

    /** A dataset's newest revision that is not archived, in any status; without its Arrow schema (null). */
    public Optional<RevisionRecord> latestRevision(String datasetId) {
        return revisionsOf(datasetId, false, null, null, 0, 1).stream().findFirst();
    }

    /**
     * The environment's dataset {@code name}'s newest COMPLETED revision that is not archived, with its files: what a
     * reader of "the dataset" reads.
     */
    public Optional<RevisionRecord> latestCompleted(String environment, String name) {
        return revisions(
                        "SELECT r.* FROM dataset_revision r JOIN dataset d ON d.id = r.dataset_id"
                                + " WHERE d.environment = ? AND d.name = ? AND r.status = 'COMPLETED'"
                                + " AND r.archived_at IS NULL ORDER BY r.numeric_id DESC LIMIT 1",
                        List.of(environment, name),
                        true)
                .stream()
                .findFirst();
    }

    /** How many revisions a dataset has that are not archived. */
    public long revisionCount(String datasetId) {
        return SqlQuery.select(
                        db,
                        "SELECT COUNT(*) FROM dataset_revision WHERE dataset_id = ? AND archived_at IS NULL",
                        List.of(datasetId),
                        rs -> rs.getLong(1),
                        "dataset revisions")
                .get(0);
    }

    /** Archives a revision (idempotent); returns it as it is now, or empty when the environment has none such. */
    public Optional<RevisionRecord> archive(String environment, String revisionId, Instant at) {
        SqlQuery.update(
                db,
                "UPDATE dataset_revision SET archived_at = ? WHERE environment = ? AND id = ? AND archived_at IS NULL",
                ps -> {
                    ps.setTimestamp(1, Timestamp.from(at));
                    ps.setString(2, environment);
                    ps.setString(3, revisionId);
                },
                "archiving revision " + revisionId);
        return revision(environment, revisionId);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // datasets

    /** The environment's dataset with this id. */
    public Optional<DatasetRecord> dataset(String environment, String id) {
        return datasets("SELECT * FROM dataset WHERE environment = ? AND id = ?", List.of(environment, id)).stream()
                .findFirst();
    }

    /** The environment's dataset with this name. */
    public Optional<DatasetRecord> datasetNamed(String environment, String name) {
        return datasets("SELECT * FROM dataset WHERE environment = ? AND name = ?", List.of(environment, name)).stream()
                .findFirst();
    }

    /** The environment's datasets matching {@code query}, one page. */
    public List<DatasetRecord> datasets(String environment, DatasetQuery query) {
        StringBuilder sql = new StringBuilder("SELECT * FROM dataset d WHERE environment = ?");
        List<Object> args = new ArrayList<>(List.of(environment));
        if (query.search() != null && !query.search().isEmpty()) {
            sql.append(" AND LOWER(name) LIKE ? ESCAPE '\\'");
            args.add("%" + SqlQuery.likeEscape(query.search().toLowerCase(java.util.Locale.ROOT)) + "%");
        }
        if (!query.ids().isEmpty()) {
            sql.append(" AND id IN (")
                    .append(SqlQuery.placeholders(query.ids().size()))
                    .append(")");
            args.addAll(query.ids());
        }
        if (!query.statuses().isEmpty()) {
            sql.append(" AND (SELECT r.status FROM dataset_revision r WHERE r.dataset_id = d.id AND r.archived_at IS"
                            + " NULL ORDER BY r.numeric_id DESC LIMIT 1) IN (")
                    .append(SqlQuery.placeholders(query.statuses().size()))
                    .append(")");
            query.statuses().forEach(s -> args.add(s.name()));
        }
        if (query.after() > 0) {
            sql.append(query.ascending() ? " AND seq > ?" : " AND seq < ?");
            args.add(query.after());
        }
        sql.append(" ORDER BY seq ").append(query.ascending() ? "ASC" : "DESC").append(" LIMIT ?");
        args.add(query.limit());
        return datasets(sql.toString(), args);
    }

    /** The names of the environment's datasets, in name order. */
    public List<String> names(String environment) {
        return SqlQuery.select(
                db,
                "SELECT name FROM dataset WHERE environment = ? ORDER BY name",
                List.of(environment),
                rs -> rs.getString(1),
                "dataset names");
    }

    /** Renames a dataset; false when the environment has another dataset of that name. */
    public boolean rename(String environment, String id, String newName) {
        synchronized (db) {
            Optional<DatasetRecord> other = datasetNamed(environment, newName);
            if (other.isPresent() && !other.get().id().equals(id)) {
                return false;
            }
            SqlQuery.update(
                    db,
                    "UPDATE dataset SET name = ? WHERE environment = ? AND id = ?",
                    ps -> {
                        ps.setString(1, newName);
                        ps.setString(2, environment);
                        ps.setString(3, id);
                    },
                    "renaming dataset " + id);
            return true;
        }
    }

    /**
     * Deletes a dataset with its revisions and their file records, in one transaction. The blobs stay (content
     * addressed, they may hold the same bytes as another dataset's files).
     */
    public void delete(String environment, String id) {
        synchronized (db) {
            db.write("deleting dataset " + id, c -> {
                boolean autoCommit = c.getAutoCommit();
                c.setAutoCommit(false);
                try {
                    for (String sql : List.of(
                            "DELETE FROM dataset_file WHERE revision_id IN (SELECT id FROM dataset_revision"
                                    + " WHERE dataset_id = ? AND environment = ?)",
                            "DELETE FROM dataset_revision WHERE dataset_id = ? AND environment = ?",
                            "DELETE FROM dataset WHERE id = ? AND environment = ?")) {
                        try (PreparedStatement ps = c.prepareStatement(sql)) {
                            ps.setString(1, id);
                            ps.setString(2, environment);
                            ps.executeUpdate();
                        }
                    }
                    c.commit();
                    return null;
                } catch (SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                } finally {
                    c.setAutoCommit(autoCommit);
                }
            });
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    private List<DatasetRecord> datasets(String sql, List<?> args) {
        return SqlQuery.select(db, sql, args, DatasetStore::dataset, "datasets");
    }

    private static Optional<DatasetRecord> datasetWhere(Connection c, String where, String... args)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT * FROM dataset WHERE " + where)) {
            for (int i = 0; i < args.length; i++) {
                ps.setString(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(dataset(rs)) : Optional.empty();
            }
        }
    }

    private static DatasetRecord dataset(ResultSet rs) throws SQLException {
        return new DatasetRecord(
                rs.getString("id"),
                rs.getLong("seq"),
                rs.getString("environment"),
                rs.getString("name"),
                instant(rs, "created_at"));
    }

    /** The revisions {@code sql} selects; with their Arrow schemas when it selects them ({@code withSchema}). */
    private List<RevisionRecord> revisions(String sql, List<?> args, boolean withSchema) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new RevisionRecord(
                        rs.getString("id"),
                        rs.getLong("numeric_id"),
                        rs.getString("dataset_id"),
                        rs.getString("environment"),
                        RevisionStatus.valueOf(rs.getString("status")),
                        rs.getString("message"),
                        rs.getLong("num_rows"),
                        rs.getLong("size_bytes"),
                        rs.getInt("num_files"),
                        columns(rs.getString("columns_json")),
                        withSchema ? rs.getBytes("arrow_schema") : null,
                        instant(rs, "created_at"),
                        instant(rs, "completed_at"),
                        instant(rs, "archived_at")),
                "dataset revisions");
    }

    private static ObjectRecord object(ResultSet rs) throws SQLException {
        return new ObjectRecord(
                rs.getString("id"),
                rs.getString("session_id"),
                rs.getString("environment"),
                rs.getInt("ordinal"),
                rs.getLong("size"),
                rs.getString("announced"),
                rs.getString("digest"));
    }

    private static String single(Connection c, String sql, String arg) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, arg);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    private static String json(List<DatasetColumn> columns) {
        try {
            return JSON.writeValueAsString(columns);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("column names and types always serialise", e);
        }
    }

    private static List<DatasetColumn> columns(String json) {
        if (json == null) {
            return List.of();
        }
        try {
            return JSON.readValue(json, new TypeReference<List<DatasetColumn>>() {});
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("the server wrote this column list itself: " + e.getMessage(), e);
        }
    }
}
