package ai.chalk.compute.server.store;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Volume records (name and creation time) in the embedded database; their files live on disk. */
public final class VolumeStore {

    /** A volume as recorded. */
    public record VolumeRecord(String name, Instant createdAt) {
    }

    private final Database db;

    public VolumeStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS volume (
                  name VARCHAR(64) PRIMARY KEY,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");
    }

    /** Inserts a volume; returns empty when one with that name exists already. */
    public Optional<VolumeRecord> insert(String name, Instant createdAt) {
        synchronized (db) {
            if (find(name).isPresent()) {
                return Optional.empty();
            }
            return db.write("saving volume " + name, c -> {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO volume (name, created_at) VALUES (?, ?)")) {
                    ps.setString(1, name);
                    ps.setTimestamp(2, Timestamp.from(createdAt));
                    ps.executeUpdate();
                    return Optional.of(new VolumeRecord(name, createdAt));
                }
            });
        }
    }

    public Optional<VolumeRecord> find(String name) {
        return query("SELECT * FROM volume WHERE name = ?", name, 1).stream().findFirst();
    }

    /** Volumes after {@code afterName} in name order, at most {@code limit}. */
    public List<VolumeRecord> list(String afterName, int limit) {
        return query("SELECT * FROM volume WHERE name > ? ORDER BY name LIMIT ?", afterName, limit);
    }

    public void delete(String name) {
        db.write("deleting volume " + name, c -> {
            try (PreparedStatement ps = c.prepareStatement("DELETE FROM volume WHERE name = ?")) {
                ps.setString(1, name);
                return ps.executeUpdate();
            }
        });
    }

    private List<VolumeRecord> query(String sql, String arg, int limit) {
        return db.read("reading volumes", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setString(1, arg);
                if (sql.contains("LIMIT")) {
                    ps.setInt(2, limit);
                }
                List<VolumeRecord> out = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new VolumeRecord(rs.getString("name"), rs.getTimestamp("created_at").toInstant()));
                    }
                }
                return out;
            }
        });
    }
}
