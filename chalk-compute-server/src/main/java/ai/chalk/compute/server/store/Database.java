package ai.chalk.compute.server.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's embedded database: one H2 file under {@code <data-dir>/state}. A single
 * connection serialised by the stores is plenty for the request rates of one server and keeps
 * the file consistent without a pool.
 *
 * <p>H2 closes the whole database after one failed write (a full disk, an I/O error), and every later
 * statement fails until it is opened again. So a statement that fails that way is run once more on a
 * freshly opened connection (H2 recovers the file from its last good state); when that fails too the
 * database is {@linkplain #problem() failing}: listeners hear why, and hear again once a write succeeds.
 */
public final class Database implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Database.class);
    /** Below this much free space the file system counts as full: H2 writes in chunks of tens of KiB. */
    private static final long FULL_BELOW_BYTES = 1 << 20;
    /** The environment of rows written before environments existed: {@code Caller.DEFAULT_ENVIRONMENT}. */
    static final String DEFAULT_ENVIRONMENT = "default";

    /** Statements run against the connection, which may be opened afresh between attempts. */
    interface Work<T> {
        T run(Connection connection) throws SQLException;
    }

    private final String url;
    private final Path file;
    private final List<Consumer<Optional<String>>> listeners = new CopyOnWriteArrayList<>();
    private Connection connection;
    private volatile String problem;

    private Database(String url, Path file) {
        this.url = url;
        this.file = file;
    }

    /** Opens (creating if needed) the database under {@code dataDir/state}. */
    public static Database open(Path dataDir) {
        Path dir = dataDir.resolve("state");
        try {
            Files.createDirectories(dir);
            Path file = dir.resolve("chalk-compute");
            // FILE_LOCK=FS: a second server on the same data directory fails fast instead of corrupting it.
            // retry: an interrupted thread (a request cancelled, an executor stopped) closes a plain FileChannel
            // under H2, which then fails every later write and the close; this file system reopens it instead
            Database db = new Database(
                    "jdbc:h2:retry:" + file.toAbsolutePath() + ";FILE_LOCK=FS;DB_CLOSE_ON_EXIT=FALSE;WRITE_DELAY=0",
                    file);
            db.connection = db.connect();
            db.execute("CREATE TABLE IF NOT EXISTS store_probe (id INT PRIMARY KEY, written_at TIMESTAMP)");
            return db;
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "cannot open the server database in " + dir + ": " + e.getMessage()
                            + " (is another server using this data directory?)",
                    e);
        } catch (IOException e) {
            throw new IllegalStateException("cannot create " + dir + ": " + e.getMessage(), e);
        }
    }

    private Connection connect() throws SQLException {
        Connection c = DriverManager.getConnection(url, "sa", "");
        c.setAutoCommit(true);
        return c;
    }

    /** Runs statements that only read; a failure is "{@code what} failed". */
    synchronized <T> T read(String what, Work<T> work) {
        return run(what, work, false);
    }

    /** Runs statements that write; a success after a failure means the database has recovered. */
    synchronized <T> T write(String what, Work<T> work) {
        return run(what, work, true);
    }

    private <T> T run(String what, Work<T> work, boolean writes) {
        try {
            if (connection == null) {
                connection = connect();
            }
            return succeeded(work.run(connection), writes);
        } catch (SQLException first) {
            if (!broken(first)) {
                throw new StoreException(what + " failed: " + first.getMessage(), StoreException.Kind.FAILED, first);
            }
            try {
                reopen();
                return succeeded(work.run(connection), writes);
            } catch (SQLException second) {
                throw failing(what, second);
            }
        }
    }

    private <T> T succeeded(T result, boolean writes) {
        if (writes && problem != null) {
            problem = null;
            log.info("The server database in {} writes again; the server is healthy", file.getParent());
            listeners.forEach(l -> l.accept(Optional.empty()));
        }
        return result;
    }

    /**
     * Whether the failure is the database's rather than the statement's: a constraint, syntax or data error leaves
     * the database working, anything else (H2 closed itself, an I/O error) may not.
     */
    private static boolean broken(SQLException e) {
        String state = e.getSQLState();
        return state == null || !(state.startsWith("22") || state.startsWith("23") || state.startsWith("42"));
    }

    private void reopen() throws SQLException {
        Connection old = connection;
        connection = null;
        if (old != null) {
            try {
                old.close();
            } catch (SQLException e) {
                log.debug("closing the failed database connection: {}", e.toString());
            }
        }
        connection = connect();
    }

    private StoreException failing(String what, SQLException e) {
        boolean full = diskFull(e);
        // clients read this reason: it says what is wrong without the host's paths, which the log has
        String reason = full
                ? "the file system of the server's data directory is full, so the server cannot record changes;"
                        + " the operator must free space there, and the server recovers by itself"
                : "the server's database cannot be used (" + e.getClass().getSimpleName() + " " + e.getErrorCode()
                        + "); the server retries and recovers by itself once it works again";
        boolean changed = !reason.equals(problem);
        problem = reason;
        if (changed) {
            log.warn(
                    "The store in {} is failing ({} bytes free there): {}: {}",
                    file.getParent(),
                    usableBytes(),
                    reason,
                    firstLine(e));
            listeners.forEach(l -> l.accept(Optional.of(reason)));
        }
        return new StoreException(
                what + " failed: " + reason, full ? StoreException.Kind.DISK_FULL : StoreException.Kind.UNAVAILABLE, e);
    }

    private boolean diskFull(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t.getMessage() != null && t.getMessage().contains("No space left on device")) {
                return true;
            }
        }
        return usableBytes() < FULL_BELOW_BYTES;
    }

    private long usableBytes() {
        try {
            return Files.getFileStore(file.getParent()).getUsableSpace();
        } catch (IOException e) {
            return Long.MAX_VALUE;
        }
    }

    private static String firstLine(Throwable e) {
        String m = String.valueOf(e.getMessage());
        int nl = m.indexOf('\n');
        String line = nl < 0 ? m : m.substring(0, nl);
        return line.endsWith("; SQL statement:")
                ? line.substring(0, line.length() - "; SQL statement:".length())
                : line;
    }

    /** Why the database cannot record changes right now, if it cannot. */
    public Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /** Hears the database start failing (with why) and recover (empty), on the thread that noticed. */
    public void onProblemChange(Consumer<Optional<String>> listener) {
        listeners.add(listener);
    }

    /** While failing, tries a small write, so the database recovers without waiting for a request that writes. */
    public void probe() {
        if (problem == null) {
            return;
        }
        try {
            write("probing the database", c -> {
                try (Statement s = c.createStatement()) {
                    return s.executeUpdate("MERGE INTO store_probe KEY (id) VALUES (1, CURRENT_TIMESTAMP)");
                }
            });
        } catch (StoreException e) {
            log.debug("the database is still failing: {}", e.getMessage());
        }
    }

    synchronized void execute(String sql) {
        write("schema update", c -> {
            try (Statement s = c.createStatement()) {
                return s.execute(sql);
            }
        });
    }

    /**
     * Gives {@code table} the {@code environment} column every resource has (see {@code server.auth.Caller}). Rows
     * written before environments existed are in {@code default}, so an existing data directory upgrades in place.
     */
    void environmentColumn(String table) {
        execute("ALTER TABLE " + table + " ADD COLUMN IF NOT EXISTS environment VARCHAR(64) NOT NULL DEFAULT '"
                + DEFAULT_ENVIRONMENT + "'");
    }

    /**
     * Makes {@code columns} the primary key of {@code table}, replacing the one it has (a name unique server-wide
     * becomes unique per environment); does nothing when it is that key already.
     */
    void primaryKey(String table, List<String> columns) {
        List<String> current = read("reading the schema of " + table, c -> {
            try (var ps = c.prepareStatement("SELECT k.COLUMN_NAME FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS t"
                    + " JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE k ON k.CONSTRAINT_NAME = t.CONSTRAINT_NAME"
                    + " AND k.TABLE_NAME = t.TABLE_NAME AND k.TABLE_SCHEMA = t.TABLE_SCHEMA"
                    + " WHERE t.TABLE_NAME = ? AND t.CONSTRAINT_TYPE = 'PRIMARY KEY' ORDER BY k.ORDINAL_POSITION")) {
                ps.setString(1, table.toUpperCase(Locale.ROOT));
                List<String> out = new ArrayList<>();
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(rs.getString(1).toLowerCase(Locale.ROOT));
                    }
                }
                return out;
            }
        });
        if (current.equals(columns)) {
            return;
        }
        if (!current.isEmpty()) {
            execute("ALTER TABLE " + table + " DROP PRIMARY KEY");
        }
        execute("ALTER TABLE " + table + " ADD PRIMARY KEY (" + String.join(", ", columns) + ")");
    }

    /** Where the database lives, for logs. */
    public Path file() {
        return file;
    }

    @Override
    public synchronized void close() {
        if (connection == null) {
            return;
        }
        try {
            connection.close();
        } catch (SQLException e) {
            // a database that closed itself after a failed write has nothing more to save
            log.warn("Closing the server database failed: {}", firstLine(e));
        } finally {
            connection = null;
        }
    }
}
