package ai.chalk.compute.server.store;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * Which environments have stored which blobs, and how many bytes that makes for each. Blob bytes are content-addressed
 * and kept once on disk whoever stored them; an environment may read a blob, or count it present, only once it has
 * stored those bytes itself, so no environment learns from the blob service that another one holds the same bytes.
 * Each environment's blobs count in full against its blob storage, shared bytes included, as they would if it were
 * alone on the server.
 */
public final class BlobOwnerStore {

    /** How old a recorded use may be before asking about the blob records a new one. */
    public static final java.time.Duration USE_REFRESH = java.time.Duration.ofMinutes(1);

    private final Database db;
    /** Each environment's stored bytes, read from the table at first need and kept current by {@link #own}. */
    private final Map<String, Long> storedBy = new HashMap<>();

    /**
     * @param adopt  the digests (hex) of the blobs already on disk, asked for only when the table is first made: they
     *               were uploaded before environments existed, in {@code default}
     * @param sizeOf the size in bytes of the blob with this digest (hex) on disk, 0 when it is gone: for the blobs
     *               recorded before sizes were
     */
    public BlobOwnerStore(Database db, Supplier<List<String>> adopt, ToLongFunction<String> sizeOf) {
        this.db = db;
        boolean existed = !SqlQuery.select(
                        db,
                        "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES" + " WHERE TABLE_NAME = 'BLOB_OWNER'",
                        List.of(),
                        rs -> rs.getString(1),
                        "the schema")
                .isEmpty();
        db.execute("""
                CREATE TABLE IF NOT EXISTS blob_owner (
                  environment VARCHAR(64) NOT NULL,
                  digest VARCHAR(64) NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  PRIMARY KEY (environment, digest))""");
        db.execute("ALTER TABLE blob_owner ADD COLUMN IF NOT EXISTS size_bytes BIGINT");
        // when the environment last stored the blob or asked about it, for the collection of unused blobs
        db.execute("ALTER TABLE blob_owner ADD COLUMN IF NOT EXISTS used_at TIMESTAMP WITH TIME ZONE");
        // rows from before uses were recorded: their blobs may have been asked about just before the upgrade
        db.execute("UPDATE blob_owner SET used_at = CURRENT_TIMESTAMP WHERE used_at IS NULL");
        db.execute("CREATE INDEX IF NOT EXISTS blob_owner_digest ON blob_owner (digest)");
        if (!existed) {
            adopt.get().forEach(hex -> own(Database.DEFAULT_ENVIRONMENT, hex, sizeOf.applyAsLong(hex)));
        }
        // by the primary key: a digest alone would scan the table once for each blob
        Map<String, Long> sizes = new HashMap<>();
        for (String[] row : SqlQuery.select(
                db,
                "SELECT environment, digest FROM blob_owner WHERE size_bytes IS NULL",
                List.of(),
                rs -> new String[] {rs.getString(1), rs.getString(2)},
                "blob owners")) {
            long size = sizes.computeIfAbsent(row[1], sizeOf::applyAsLong);
            SqlQuery.update(
                    db,
                    "UPDATE blob_owner SET size_bytes = ? WHERE environment = ? AND digest = ?",
                    ps -> {
                        ps.setLong(1, size);
                        ps.setString(2, row[0]);
                        ps.setString(3, row[1]);
                    },
                    "recording the size of blob " + row[1]);
        }
    }

    /**
     * Records that the environment stored the blob with this digest (hex) of {@code size} bytes; recording it again
     * does nothing.
     */
    public synchronized void own(String environment, String digestHex, long size) {
        if (owns(environment, digestHex)) {
            return;
        }
        SqlQuery.update(
                db,
                "MERGE INTO blob_owner (environment, digest, created_at, size_bytes, used_at)"
                        + " KEY (environment, digest) VALUES (?, ?, ?, ?, ?)",
                ps -> {
                    Timestamp now = Timestamp.from(Instant.now());
                    ps.setString(1, environment);
                    ps.setString(2, digestHex);
                    ps.setTimestamp(3, now);
                    ps.setLong(4, size);
                    ps.setTimestamp(5, now);
                },
                "recording blob " + digestHex);
        storedBy.computeIfPresent(environment, (e, bytes) -> bytes + size);
    }

    /**
     * Whether the environment stored the blob with this digest (hex). A blob asked about counts as used now, and is not
     * collected for as long as unused blobs are kept ({@link #release}): whoever asks may be about to deploy, read or
     * skip uploading it, trusting that it stays. The use is written only when the last one is more than
     * {@link #USE_REFRESH} old: a write per digest made a FindMissingBlobs of 10,000 digests hold the store's writes
     * for 3 s (0.3 ms each, twelve times the read), in a loop if a tenant liked.
     */
    public boolean owns(String environment, String digestHex) {
        List<Timestamp> used = SqlQuery.select(
                db,
                "SELECT used_at FROM blob_owner WHERE environment = ? AND digest = ?",
                List.of(environment, digestHex),
                rs -> rs.getTimestamp(1),
                "blob owners");
        if (used.isEmpty()) {
            return false;
        }
        Instant now = Instant.now();
        if (used.get(0) != null && !used.get(0).toInstant().isBefore(now.minus(USE_REFRESH))) {
            return true; // used lately: a collection's cutoff is at least an hour back
        }
        // a collection may release it meanwhile: then it is not owned any more
        return SqlQuery.updateCount(
                        db,
                        "UPDATE blob_owner SET used_at = ? WHERE environment = ? AND digest = ?",
                        ps -> {
                            ps.setTimestamp(1, Timestamp.from(now));
                            ps.setString(2, environment);
                            ps.setString(3, digestHex);
                        },
                        "blob owners")
                > 0;
    }

    /** A blob an environment stored, and its size. */
    public record Owned(String environment, String digestHex, long size) {}

    /** The blobs that their environment neither stored nor asked about since {@code cutoff}. */
    public List<Owned> unusedSince(Instant cutoff) {
        return SqlQuery.select(
                db,
                "SELECT environment, digest, COALESCE(size_bytes, 0) FROM blob_owner" + " WHERE used_at < ?",
                List.of(Timestamp.from(cutoff)),
                rs -> new Owned(rs.getString(1), rs.getString(2), rs.getLong(3)),
                "blob owners");
    }

    /**
     * Forgets that the environment stored the blob, if it has not stored or asked about it since {@code cutoff}
     * (checked in the same statement, so a use racing with this one keeps it); its bytes no longer count against the
     * environment's blob storage. Returns whether it was forgotten.
     */
    public synchronized boolean release(Owned blob, Instant cutoff) {
        boolean released = SqlQuery.updateCount(
                        db,
                        "DELETE FROM blob_owner WHERE environment = ? AND digest = ?" + " AND used_at < ?",
                        ps -> {
                            ps.setString(1, blob.environment());
                            ps.setString(2, blob.digestHex());
                            ps.setTimestamp(3, Timestamp.from(cutoff));
                        },
                        "forgetting blob " + blob.digestHex())
                > 0;
        if (released) {
            storedBy.computeIfPresent(blob.environment(), (e, bytes) -> Math.max(0, bytes - blob.size()));
        }
        return released;
    }

    /** The digests (hex) of the blobs some environment stored. */
    public java.util.Set<String> ownedDigests() {
        return new java.util.HashSet<>(SqlQuery.select(
                db, "SELECT DISTINCT digest FROM blob_owner", List.of(), rs -> rs.getString(1), "blob owners"));
    }

    /** Whether any environment stored the blob with this digest (hex). */
    public boolean ownedByAny(String digestHex) {
        return !SqlQuery.select(
                        db,
                        "SELECT 1 FROM blob_owner WHERE digest = ? LIMIT 1",
                        List.of(digestHex),
                        rs -> rs.getInt(1),
                        "blob owners")
                .isEmpty();
    }

    /** The bytes of all the blobs the environment stored. */
    public synchronized long stored(String environment) {
        return storedBy.computeIfAbsent(
                environment,
                e -> SqlQuery.select(
                                db,
                                "SELECT COALESCE(SUM(size_bytes), 0) FROM blob_owner WHERE environment = ?",
                                List.of(e),
                                rs -> rs.getLong(1),
                                "blob owners")
                        .get(0));
    }
}
