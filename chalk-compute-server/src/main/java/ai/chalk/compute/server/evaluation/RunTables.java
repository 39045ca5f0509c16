package ai.chalk.compute.server.evaluation;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.stream.Collectors;
import org.duckdb.DuckDBConnection;
import org.jspecify.annotations.Nullable;

/**
 * The engine of evaluation runs' tables, an embedded DuckDB: each run's input rows and result ({@link RunResult}). One
 * in-memory engine, opened at the first run, serves them all, each on a connection of its own and with tables of its
 * own: opening an engine (its threads and buffer pool) cost a run more than reading its rows. Its memory limit, shared
 * by the runs under way, spills to the server's work directory.
 */
final class RunTables {

    /** The result's column of the task's answer. */
    static final String OUTPUT = "output";
    /** The result's column of why a row failed (its task, else its scorers), null when it did not. */
    static final String ERROR = "error";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MEMORY_MB = 256;

    /**
     * One row of the result, beside its input columns.
     *
     * @param output   the task's answer as plain Java (null when it failed)
     * @param scores   each scorer's score in the evaluation's order, null where it failed or the task did
     * @param metadata each scorer's metadata as a JSON object, in the same order
     * @param error    why the row failed, or null
     */
    record ResultRow(
            @Nullable Object output,
            List<@Nullable Double> scores,
            List<String> metadata,
            @Nullable String error) {}

    private final Path workDir;
    private final java.util.concurrent.atomic.AtomicLong tableNames = new java.util.concurrent.atomic.AtomicLong();
    private @Nullable DuckDBConnection engine;
    private boolean closed;

    RunTables(Path workDir) {
        this.workDir = workDir;
    }

    /** Closes the engine: the server is stopping (operations under way fail; the runs end with the server). */
    synchronized void close() {
        closed = true;
        if (engine != null) {
            try {
                engine.close();
            } catch (SQLException e) {
                // nothing left to release that the process exit does not
            }
            engine = null;
        }
    }

    /**
     * Starts a run's result: reads the files' rows into the engine, on connections of the run's own.
     *
     * @param scorerIds the scorers' ids, in the evaluation's order
     * @param executor  reads the files into the engine in the background
     */
    RunResult begin(List<Path> files, List<String> scorerIds, java.util.concurrent.Executor executor)
            throws SQLException, IOException {
        Files.createDirectories(workDir);
        Connection connection = connection();
        Connection loader;
        try {
            loader = connection();
        } catch (SQLException e) {
            connection.close();
            throw e;
        }
        // the engine is shared: a run's tables have names of their own, dropped when it ends
        return new RunResult(connection, loader, tableNames.incrementAndGet(), scan(files), scorerIds, executor);
    }

    /** The tables in the engine now: those of the runs under way. */
    java.util.Set<String> tables() throws SQLException {
        java.util.Set<String> names = new java.util.TreeSet<>();
        try (Connection c = connection();
                Statement s = c.createStatement();
                java.sql.ResultSet rs = s.executeQuery("SELECT table_name FROM duckdb_tables()")) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        }
        return names;
    }

    /** A value as text: strings as they are, anything else as JSON. */
    static String text(Object value) {
        if (value instanceof String s) {
            return s;
        }
        try {
            return JSON.writeValueAsString(
                    value instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : value);
        } catch (JsonProcessingException e) {
            return String.valueOf(value);
        }
    }

    /** A connection of its own to the shared engine, which is opened (or opened again after a failure) here. */
    private synchronized Connection connection() throws SQLException {
        if (closed) {
            throw new SQLException("the server is stopping");
        }
        if (engine == null || engine.isClosed()) {
            DuckDBConnection c = (DuckDBConnection) DriverManager.getConnection("jdbc:duckdb:");
            try (Statement s = c.createStatement()) {
                s.execute("SET memory_limit = '" + MEMORY_MB + "MB'");
                s.execute("SET temp_directory = " + literal(workDir));
                s.execute("SET preserve_insertion_order = true");
            } catch (SQLException e) {
                c.close();
                throw e;
            }
            engine = c;
        }
        return engine.duplicate();
    }

    private static String scan(List<Path> files) {
        return "read_parquet([" + files.stream().map(RunTables::literal).collect(Collectors.joining(", ")) + "])";
    }

    static String literal(Path path) {
        return "'" + path.toAbsolutePath().toString().replace("'", "''") + "'";
    }

    static String quote(String identifier) {
        return "\"" + identifier.replace("\"", "\"\"") + "\"";
    }
}
