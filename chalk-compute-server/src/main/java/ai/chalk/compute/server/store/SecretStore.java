package ai.chalk.compute.server.store;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Secrets and integrations of each environment, as ciphertext: this store never sees a value in the clear (the
 * {@code server.secret} package encrypts before and decrypts after). A secret's name is unique within its environment,
 * as is an integration's; every upsert of a secret takes a new revision from one sequence, so a revision never repeats,
 * not even after a delete, and can stand for "this exact value" in a function version's identity.
 */
public final class SecretStore {

    /** A secret as recorded: its value still sealed. */
    public record SecretRecord(
            String id, String environment, String name, long revision, Instant updatedAt, byte[] sealed) {}

    /** An integration as recorded, without its values. */
    public record IntegrationRecord(
            String id, String environment, String name, String kind, Instant createdAt, Instant updatedAt) {}

    private final Database db;

    public SecretStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS secret (
                  id VARCHAR(64) PRIMARY KEY,
                  environment VARCHAR(64) NOT NULL,
                  name VARCHAR(255) NOT NULL,
                  revision BIGINT NOT NULL,
                  updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  sealed VARBINARY(262144) NOT NULL,
                  UNIQUE (environment, name))""");
        db.execute("CREATE SEQUENCE IF NOT EXISTS secret_revision START WITH 1");
        db.execute("""
                CREATE TABLE IF NOT EXISTS integration (
                  id VARCHAR(64) PRIMARY KEY,
                  environment VARCHAR(64) NOT NULL,
                  name VARCHAR(255) NOT NULL,
                  kind VARCHAR(64) NOT NULL,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
                  UNIQUE (environment, name))""");
        db.execute("""
                CREATE TABLE IF NOT EXISTS integration_value (
                  integration_id VARCHAR(64) NOT NULL,
                  name VARCHAR(255) NOT NULL,
                  sealed VARBINARY(262144) NOT NULL,
                  PRIMARY KEY (integration_id, name))""");
    }

    /**
     * Records {@code sealed} as the value of the environment's secret {@code name}: a new secret with {@code newId},
     * or the existing one (same id) with a new revision.
     */
    public SecretRecord upsertSecret(String environment, String name, String newId, byte[] sealed, Instant at) {
        synchronized (db) {
            Optional<SecretRecord> existing = secretNamed(environment, name);
            return db.write("saving secret " + name, c -> {
                long revision;
                try (PreparedStatement ps = c.prepareStatement("SELECT NEXT VALUE FOR secret_revision");
                        ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    revision = rs.getLong(1);
                }
                String id = existing.map(SecretRecord::id).orElse(newId);
                try (PreparedStatement ps = c.prepareStatement(
                        existing.isPresent()
                                ? "UPDATE secret SET revision = ?, updated_at = ?, sealed = ? WHERE id = ?"
                                : "INSERT INTO secret (revision, updated_at, sealed, id, environment, name)"
                                        + " VALUES (?, ?, ?, ?, ?, ?)")) {
                    ps.setLong(1, revision);
                    ps.setTimestamp(2, Timestamp.from(at));
                    ps.setBytes(3, sealed);
                    ps.setString(4, id);
                    if (existing.isEmpty()) {
                        ps.setString(5, environment);
                        ps.setString(6, name);
                    }
                    ps.executeUpdate();
                }
                return new SecretRecord(id, environment, name, revision, at, sealed);
            });
        }
    }

    /** How many of something an environment has, and the sealed bytes they hold. */
    public record Usage(long count, long bytes) {}

    /**
     * The environment's secrets but the one named {@code except}: how many of them are named with {@code prefix} (or,
     * when {@code named} is false, are not), and the sealed bytes of all of them.
     */
    public Usage secretUsage(String environment, String except, String prefix, boolean named) {
        return SqlQuery.select(
                        db,
                        "SELECT COUNT(CASE WHEN (name LIKE ? ESCAPE '\\') = ? THEN 1 END),"
                                + " COALESCE(SUM(OCTET_LENGTH(sealed)), 0) FROM secret"
                                + " WHERE environment = ? AND name <> ?",
                        List.of(SqlQuery.likeEscape(prefix) + "%", named, environment, except),
                        rs -> new Usage(rs.getLong(1), rs.getLong(2)),
                        "secrets' usage")
                .get(0);
    }

    /** The environment's integrations but the one named {@code except}: how many, and their values' sealed bytes. */
    public Usage integrationUsage(String environment, String except) {
        return SqlQuery.select(
                        db,
                        "SELECT (SELECT COUNT(*) FROM integration WHERE environment = ? AND name <> ?),"
                                + " (SELECT COALESCE(SUM(OCTET_LENGTH(v.sealed)), 0) FROM integration_value v"
                                + " JOIN integration i ON i.id = v.integration_id"
                                + " WHERE i.environment = ? AND i.name <> ?)",
                        List.of(environment, except, environment, except),
                        rs -> new Usage(rs.getLong(1), rs.getLong(2)),
                        "integrations' usage")
                .get(0);
    }

    /** The environment's secret of this name. */
    public Optional<SecretRecord> secretNamed(String environment, String name) {
        return secrets("SELECT * FROM secret WHERE environment = ? AND name = ?", List.of(environment, name)).stream()
                .findFirst();
    }

    /** The environment's secret with this id (another environment's is not there). */
    public Optional<SecretRecord> secret(String environment, String id) {
        return secrets("SELECT * FROM secret WHERE environment = ? AND id = ?", List.of(environment, id)).stream()
                .findFirst();
    }

    /** The environment's secrets by name. */
    public List<SecretRecord> secrets(String environment) {
        return secrets("SELECT * FROM secret WHERE environment = ? ORDER BY name", List.of(environment));
    }

    /** Deletes the environment's secret {@code name}; whether there was one. */
    public boolean deleteSecret(String environment, String name) {
        return SqlQuery.updateCount(
                        db,
                        "DELETE FROM secret WHERE environment = ? AND name = ?",
                        ps -> {
                            ps.setString(1, environment);
                            ps.setString(2, name);
                        },
                        "deleting secret " + name)
                > 0;
    }

    /**
     * Every environment's secrets whose names start with {@code prefix}, by environment and name (the server's own
     * upkeep: the sweep of the secrets the SDK saves for local values).
     */
    public List<SecretRecord> secretsNamedWith(String prefix) {
        return secrets(
                "SELECT * FROM secret WHERE name LIKE ? ESCAPE '\\' ORDER BY environment, name",
                List.of(SqlQuery.likeEscape(prefix) + "%"));
    }

    /**
     * Deletes the environment's secret {@code name} if it is still at {@code revision}: one set again meanwhile is a
     * new value someone saved, and stays. Whether it was deleted.
     */
    public boolean deleteSecret(String environment, String name, long revision) {
        return SqlQuery.updateCount(
                        db,
                        "DELETE FROM secret WHERE environment = ? AND name = ? AND revision = ?",
                        ps -> {
                            ps.setString(1, environment);
                            ps.setString(2, name);
                            ps.setLong(3, revision);
                        },
                        "deleting secret " + name)
                > 0;
    }

    private List<SecretRecord> secrets(String sql, List<?> args) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new SecretRecord(
                        rs.getString("id"),
                        rs.getString("environment"),
                        rs.getString("name"),
                        rs.getLong("revision"),
                        rs.getTimestamp("updated_at").toInstant(),
                        rs.getBytes("sealed")),
                "secrets");
    }

    /**
     * Records the environment's integration {@code name} with exactly these sealed values (keys not given are
     * removed): a new integration with {@code newId}, or the existing one (same id, created_at).
     */
    public IntegrationRecord putIntegration(
            String environment, String name, String kind, String newId, Map<String, byte[]> sealedValues, Instant at) {
        synchronized (db) {
            Optional<IntegrationRecord> existing = integrationNamed(environment, name);
            IntegrationRecord record = existing.map(
                            r -> new IntegrationRecord(r.id(), environment, name, kind, r.createdAt(), at))
                    .orElse(new IntegrationRecord(newId, environment, name, kind, at, at));
            return db.write("saving integration " + name, c -> {
                boolean autoCommit = c.getAutoCommit();
                c.setAutoCommit(false); // the values change together or not at all
                try {
                    try (PreparedStatement ps = c.prepareStatement(
                            existing.isPresent()
                                    ? "UPDATE integration SET kind = ?, updated_at = ? WHERE id = ?"
                                    : "INSERT INTO integration (kind, updated_at, id, environment, name, created_at)"
                                            + " VALUES (?, ?, ?, ?, ?, ?)")) {
                        ps.setString(1, kind);
                        ps.setTimestamp(2, Timestamp.from(at));
                        ps.setString(3, record.id());
                        if (existing.isEmpty()) {
                            ps.setString(4, environment);
                            ps.setString(5, name);
                            ps.setTimestamp(6, Timestamp.from(at));
                        }
                        ps.executeUpdate();
                    }
                    try (PreparedStatement ps =
                            c.prepareStatement("DELETE FROM integration_value WHERE integration_id = ?")) {
                        ps.setString(1, record.id());
                        ps.executeUpdate();
                    }
                    try (PreparedStatement ps = c.prepareStatement(
                            "INSERT INTO integration_value (integration_id, name, sealed) VALUES (?, ?, ?)")) {
                        for (Map.Entry<String, byte[]> e : sealedValues.entrySet()) {
                            ps.setString(1, record.id());
                            ps.setString(2, e.getKey());
                            ps.setBytes(3, e.getValue());
                            ps.executeUpdate();
                        }
                    }
                    c.commit();
                } catch (java.sql.SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                } finally {
                    c.setAutoCommit(autoCommit);
                }
                return record;
            });
        }
    }

    /** The environment's integration of this name. */
    public Optional<IntegrationRecord> integrationNamed(String environment, String name) {
        return integrations("SELECT * FROM integration WHERE environment = ? AND name = ?", List.of(environment, name))
                .stream()
                .findFirst();
    }

    /** The environment's integration with this id. */
    public Optional<IntegrationRecord> integration(String environment, String id) {
        return integrations("SELECT * FROM integration WHERE environment = ? AND id = ?", List.of(environment, id))
                .stream()
                .findFirst();
    }

    /** The environment's integrations by name. */
    public List<IntegrationRecord> integrations(String environment) {
        return integrations("SELECT * FROM integration WHERE environment = ? ORDER BY name", List.of(environment));
    }

    /** The sealed values of an integration by key, in key order. */
    public Map<String, byte[]> integrationValues(String integrationId) {
        Map<String, byte[]> out = new java.util.LinkedHashMap<>();
        SqlQuery.select(
                        db,
                        "SELECT name, sealed FROM integration_value WHERE integration_id = ? ORDER BY name",
                        List.of(integrationId),
                        rs -> Map.entry(rs.getString("name"), rs.getBytes("sealed")),
                        "integration values")
                .forEach(e -> out.put(e.getKey(), e.getValue()));
        return out;
    }

    /** Deletes the environment's integration {@code name} and its values; whether there was one. */
    public boolean deleteIntegration(String environment, String name) {
        synchronized (db) {
            Optional<IntegrationRecord> existing = integrationNamed(environment, name);
            if (existing.isEmpty()) {
                return false;
            }
            SqlQuery.update(
                    db,
                    "DELETE FROM integration_value WHERE integration_id = ?",
                    ps -> ps.setString(1, existing.get().id()),
                    "deleting integration " + name);
            SqlQuery.update(
                    db,
                    "DELETE FROM integration WHERE id = ?",
                    ps -> ps.setString(1, existing.get().id()),
                    "deleting integration " + name);
            return true;
        }
    }

    private List<IntegrationRecord> integrations(String sql, List<?> args) {
        return SqlQuery.select(
                db,
                sql,
                args,
                rs -> new IntegrationRecord(
                        rs.getString("id"),
                        rs.getString("environment"),
                        rs.getString("name"),
                        rs.getString("kind"),
                        rs.getTimestamp("created_at").toInstant(),
                        rs.getTimestamp("updated_at").toInstant()),
                "integrations");
    }
}
