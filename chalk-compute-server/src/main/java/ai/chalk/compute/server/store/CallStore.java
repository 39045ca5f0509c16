package ai.chalk.compute.server.store;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Queued function calls and their results, kept until a poll reads a finished one or, unread, for
 * {@link #KEPT_UNREAD} after it finished ({@link #forgetFinishedBefore}).
 */
public final class CallStore {

    /** Where a queued call is. */
    public enum State {
        PENDING,
        RUNNING,
        COMPLETED,
        FAILED
    }

    /**
     * A queued call.
     *
     * @param id        the call id
     * @param function  the function's name
     * @param versionId the version it runs on
     * @param name      the worker function called
     * @param args      its Arrow IPC stream
     * @param state     where it is
     * @param result    the answer's Arrow IPC stream, once completed
     * @param error     a serialised {@code chalk.common.v1.ChalkError}, once failed
     * @param environment the environment of the caller (and of the function): only it polls or purges the call
     */
    public record CallRecord(
            String id,
            String function,
            String versionId,
            String name,
            byte[] args,
            State state,
            Optional<byte[]> result,
            Optional<byte[]> error,
            String environment) {}

    private final Database db;

    public CallStore(Database db) {
        this.db = db;
        db.execute("""
                CREATE TABLE IF NOT EXISTS fn_call (
                  seq BIGINT AUTO_INCREMENT PRIMARY KEY,
                  id VARCHAR(64) NOT NULL UNIQUE,
                  function_name VARCHAR(255) NOT NULL,
                  version_id VARCHAR(64) NOT NULL,
                  name VARCHAR(255) NOT NULL,
                  args BLOB NOT NULL,
                  state VARCHAR(16) NOT NULL,
                  result BLOB,
                  error BLOB,
                  created_at TIMESTAMP WITH TIME ZONE NOT NULL)""");
        db.environmentColumn("fn_call");
        db.execute("CREATE INDEX IF NOT EXISTS fn_call_environment ON fn_call (environment, state)");
        db.execute("ALTER TABLE fn_call ADD COLUMN IF NOT EXISTS finished_at TIMESTAMP WITH TIME ZONE");
    }

    /**
     * How long a finished call's result waits for a poll: unread results were kept for good, each up to two 33 MiB
     * messages (its arguments and its result) in the store every environment shares.
     */
    public static final java.time.Duration KEPT_UNREAD = java.time.Duration.ofHours(24);

    /** The bytes of the environment's finished calls whose results no poll has read yet. */
    public long unreadBytes(String environment) {
        return SqlQuery.select(
                        db,
                        "SELECT COALESCE(SUM(COALESCE(OCTET_LENGTH(result), 0) + COALESCE(OCTET_LENGTH(error), 0)), 0)"
                                + " FROM fn_call WHERE environment = ? AND state IN ('COMPLETED','FAILED')",
                        List.of(environment),
                        rs -> rs.getLong(1),
                        "queued calls")
                .get(0);
    }

    /**
     * Forgets the calls that finished before {@code cutoff} and were never read (those finished before this column
     * existed by their creation time); returns how many.
     */
    public int forgetFinishedBefore(Instant cutoff) {
        return SqlQuery.updateCount(
                db,
                "DELETE FROM fn_call WHERE state IN ('COMPLETED','FAILED')"
                        + " AND COALESCE(finished_at, created_at) < ?",
                ps -> ps.setTimestamp(1, Timestamp.from(cutoff)),
                "forgetting finished calls");
    }

    /** Records a call of the environment as PENDING. */
    public void insert(String environment, String id, String function, String versionId, String name, byte[] args) {
        SqlQuery.update(
                db,
                "INSERT INTO fn_call (id, function_name, version_id, name, args, state, created_at,"
                        + " environment) VALUES (?,?,?,?,?,?,?,?)",
                ps -> {
                    ps.setString(1, id);
                    ps.setString(2, function);
                    ps.setString(3, versionId);
                    ps.setString(4, name);
                    ps.setBytes(5, args);
                    ps.setString(6, State.PENDING.name());
                    ps.setTimestamp(7, Timestamp.from(Instant.now()));
                    ps.setString(8, environment);
                },
                "queueing call " + id);
    }

    /** Records a call's state and, when it finished, its result or error. */
    public void finish(String id, State state, Optional<byte[]> result, Optional<byte[]> error) {
        SqlQuery.update(
                db,
                // a finished call's arguments are of no more use: only its result is read
                "UPDATE fn_call SET state = ?, result = ?, error = ?, finished_at = ?, args = ? WHERE id = ?",
                ps -> {
                    ps.setString(1, state.name());
                    ps.setBytes(2, result.orElse(null));
                    ps.setBytes(3, error.orElse(null));
                    ps.setTimestamp(4, Timestamp.from(Instant.now()));
                    ps.setBytes(5, new byte[0]);
                    ps.setString(6, id);
                },
                "recording call " + id);
    }

    /** The call with this id, whatever its environment (callers check it). */
    public Optional<CallRecord> find(String id) {
        return SqlQuery.select(
                        db,
                        "SELECT * FROM fn_call WHERE id = ?",
                        List.of(id),
                        rs -> new CallRecord(
                                rs.getString("id"),
                                rs.getString("function_name"),
                                rs.getString("version_id"),
                                rs.getString("name"),
                                rs.getBytes("args"),
                                State.valueOf(rs.getString("state")),
                                Optional.ofNullable(rs.getBytes("result")),
                                Optional.ofNullable(rs.getBytes("error")),
                                rs.getString("environment")),
                        "queued calls")
                .stream()
                .findFirst();
    }

    /** Forgets a call (its result was read). */
    public void delete(String id) {
        SqlQuery.update(db, "DELETE FROM fn_call WHERE id = ?", ps -> ps.setString(1, id), "forgetting call " + id);
    }

    /** Calls left unfinished by a previous run: they are recorded failed with {@code reason}. */
    public List<String> failUnfinished(String reason, byte[] error) {
        List<String> ids = SqlQuery.select(
                db,
                "SELECT id FROM fn_call WHERE state IN ('PENDING','RUNNING')",
                List.of(),
                rs -> rs.getString(1),
                "queued calls");
        ids.forEach(id -> finish(id, State.FAILED, Optional.empty(), Optional.of(error)));
        return ids;
    }

    /** Removes the environment's calls not yet started, of one function or all; returns how many per function. */
    public Map<String, Long> purgePending(String environment, Optional<String> function) {
        List<String> args = new ArrayList<>(List.of(environment));
        function.ifPresent(args::add);
        List<String[]> rows = SqlQuery.select(
                db,
                "SELECT id, function_name FROM fn_call WHERE environment = ?" + " AND state = 'PENDING'"
                        + (function.isPresent() ? " AND function_name = ?" : ""),
                args,
                rs -> new String[] {rs.getString(1), rs.getString(2)},
                "queued calls");
        // a call that started meanwhile is no longer pending: it is neither removed nor counted
        return rows.stream()
                .filter(r -> SqlQuery.updateCount(
                                db,
                                "DELETE FROM fn_call WHERE id = ? AND state = 'PENDING'",
                                ps -> ps.setString(1, r[0]),
                                "purging call " + r[0])
                        == 1)
                .collect(Collectors.groupingBy(r -> r[1], Collectors.counting()));
    }

    /**
     * Moves a queued call from PENDING to RUNNING.
     *
     * @return {@code false} when it is no longer pending (purged)
     */
    public boolean start(String id) {
        return SqlQuery.updateCount(
                        db,
                        "UPDATE fn_call SET state = 'RUNNING' WHERE id = ? AND state = 'PENDING'",
                        ps -> ps.setString(1, id),
                        "starting call " + id)
                == 1;
    }
}
