package ai.chalk.compute.server.store;

import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Volume records (environment, name and creation time) in the embedded database; their files live on disk. A name is
 * unique within its environment: two environments may each have a volume {@code cache}.
 */
public final class VolumeStore {

    /** A volume as recorded. */
    public record VolumeRecord(String environment, String name, Instant createdAt) {}

    private final Database db;

    public VolumeStore(Database db) {
        this.db = db;
        // the schema before environments; upgraded below so an existing data directory keeps its volumes in default
        db.execute("""
                CREATE TABLE IF NOT EXISTS volume (
                  name VARCHAR(64) PRIMARY KEY,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");
        db.environmentColumn("volume");
        db.primaryKey("volume", List.of("environment", "name"));
    }

    /** Inserts a volume; returns empty when the environment has one with that name already. */
    public Optional<VolumeRecord> insert(String environment, String name, Instant createdAt) {
        synchronized (db) {
            if (find(environment, name).isPresent()) {
                return Optional.empty();
            }
            return db.write("saving volume " + name, c -> {
                try (PreparedStatement ps =
                        c.prepareStatement("INSERT INTO volume (environment, name, created_at) VALUES (?, ?, ?)")) {
                    ps.setString(1, environment);
                    ps.setString(2, name);
                    ps.setTimestamp(3, Timestamp.from(createdAt));
                    ps.executeUpdate();
                    return Optional.of(new VolumeRecord(environment, name, createdAt));
                }
            });
        }
    }

    /** The environment's volume of this name. */
    public Optional<VolumeRecord> find(String environment, String name) {
        return query("SELECT * FROM volume WHERE environment = ? AND name = ?", List.of(environment, name)).stream()
                .findFirst();
    }

    /** The environment's volumes after {@code afterName} in name order, at most {@code limit}. */
    public List<VolumeRecord> list(String environment, String afterName, int limit) {
        return query(
                "SELECT * FROM volume WHERE environment = ? AND name > ? ORDER BY name LIMIT ?",
                List.of(environment, afterName, limit));
    }

    /** How many volumes the environment has. */
    public long count(String environment) {
        return SqlQuery.select(
                        db,
                        "SELECT COUNT(*) FROM volume WHERE environment = ?",
                        List.of(environment),
                        rs -> rs.getLong(1),
                        "volumes")
                .get(0);
    }

    public void delete(String environment, String name) {
        SqlQuery.update(
                db,
                "DELETE FROM volume WHERE environment = ? AND name = ?",
                ps -> {
                    ps.setString(1, environment);
                    ps.setString(2, name);
                },
                "deleting volume " + name);
    }

    private List<VolumeRecord> query(String sql, List<?> args) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new VolumeRecord(
                        rs.getString("environment"),
                        rs.getString("name"),
                        rs.getTimestamp("created_at").toInstant()),
                "volumes");
    }
}
