package ai.chalk.compute.server.store;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The server's embedded database: one H2 file under {@code <data-dir>/state}. A single
 * connection serialised by the stores is plenty for the request rates of one server and keeps
 * the file consistent without a pool.
 */
public final class Database implements AutoCloseable {

    private final Connection connection;
    private final Path file;

    private Database(Connection connection, Path file) {
        this.connection = connection;
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
            Connection c = DriverManager.getConnection(
                    "jdbc:h2:retry:" + file.toAbsolutePath() + ";FILE_LOCK=FS;DB_CLOSE_ON_EXIT=FALSE;WRITE_DELAY=0", "sa", "");
            c.setAutoCommit(true);
            return new Database(c, file);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot open the server database in " + dir + ": " + e.getMessage()
                    + " (is another server using this data directory?)", e);
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot create " + dir + ": " + e.getMessage(), e);
        }
    }

    /** The connection; callers synchronise on this {@code Database} while using it. */
    Connection connection() {
        return connection;
    }

    synchronized void execute(String sql) {
        try (Statement s = connection.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new StoreException("schema update failed: " + e.getMessage(), e);
        }
    }

    /** Where the database lives, for logs. */
    public Path file() {
        return file;
    }

    @Override
    public synchronized void close() {
        try {
            connection.close();
        } catch (SQLException e) {
            throw new StoreException("closing the database failed: " + e.getMessage(), e);
        }
    }
}
