package ai.chalk.compute.server.store;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.function.Supplier;

/**
 * Which environments have uploaded which blobs. Blob bytes are content-addressed and kept once on disk whoever
 * uploaded them; an environment may read a blob, or count it present, only once it has uploaded those bytes itself,
 * so no environment learns from the blob service that another one holds the same bytes.
 */
public final class BlobOwnerStore {

    private final Database db;

    /**
     * @param adopt the digests (hex) of the blobs already on disk, asked for only when the table is first made: they
     *              were uploaded before environments existed, in {@code default}
     */
    public BlobOwnerStore(Database db, Supplier<List<String>> adopt) {
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
        if (!existed) {
            adopt.get().forEach(hex -> own(Database.DEFAULT_ENVIRONMENT, hex));
        }
    }

    /** Records that the environment uploaded the blob with this digest (hex); recording it again does nothing. */
    public void own(String environment, String digestHex) {
        SqlQuery.update(
                db,
                "MERGE INTO blob_owner KEY (environment, digest) VALUES (?, ?, ?)",
                ps -> {
                    ps.setString(1, environment);
                    ps.setString(2, digestHex);
                    ps.setTimestamp(3, Timestamp.from(Instant.now()));
                },
                "recording blob " + digestHex);
    }

    /** Whether the environment uploaded the blob with this digest (hex). */
    public boolean owns(String environment, String digestHex) {
        return !SqlQuery.select(
                        db,
                        "SELECT 1 FROM blob_owner WHERE environment = ? AND digest = ?",
                        List.of(environment, digestHex),
                        rs -> rs.getInt(1),
                        "blob owners")
                .isEmpty();
    }
}
