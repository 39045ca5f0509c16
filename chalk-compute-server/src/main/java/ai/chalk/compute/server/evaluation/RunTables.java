package ai.chalk.compute.server.evaluation;

import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.duckdb.DuckDBAppender;
import org.duckdb.DuckDBConnection;
import org.jspecify.annotations.Nullable;

/**
 * An evaluation run's tables, read and written with an embedded DuckDB: the pinned revision's rows in file order, and
 * the result (the input columns as the revision has them, then {@code output}, each scorer's {@code <id>_score} and
 * {@code <id>_metadata}, and {@code error}; an input column of one of those names is kept as {@code input_<name>}) as
 * one Parquet file. One in-memory engine, opened at the first operation, serves them all, each on a connection of its
 * own and with tables of its own: opening an engine (its threads and buffer pool) cost a run more than reading its
 * rows. Its memory limit, shared by the runs under way, spills to the server's work directory.
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

    /** Every row of the files, in order, as column name → value. */
    List<Map<String, @Nullable Object>> read(List<Path> files) throws SQLException {
        List<Map<String, @Nullable Object>> rows = new ArrayList<>();
        try (Connection c = connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT * FROM " + scan(files))) {
            ResultSetMetaData md = rs.getMetaData();
            while (rs.next()) {
                Map<String, @Nullable Object> row = new LinkedHashMap<>();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    row.put(md.getColumnName(i), rs.getObject(i));
                }
                rows.add(row);
            }
        }
        return rows;
    }

    /**
     * Writes the result of a run over {@code files} to {@code target}: the input rows in order, each with its result.
     *
     * @param scorerIds the scorers' ids, in the evaluation's order
     * @param results   one per input row, in order
     * @return the file's rows and columns, so that storing it need not read it back
     */
    DatasetManager.Shape write(List<Path> files, List<String> scorerIds, List<ResultRow> results, Path target)
            throws SQLException, IOException {
        String outputType = outputType(results);
        StringBuilder columns = new StringBuilder(quote(OUTPUT) + " " + outputType);
        for (String id : scorerIds) {
            columns.append(", ")
                    .append(quote(id + "_score"))
                    .append(" DOUBLE, ")
                    .append(quote(id + "_metadata"))
                    .append(" VARCHAR");
        }
        columns.append(", ").append(quote(ERROR)).append(" VARCHAR");
        Files.createDirectories(workDir);
        // the engine is shared: this write's tables have names of their own, dropped when it ends
        long n = tableNames.incrementAndGet();
        String input = "input_" + n;
        String scored = "scored_" + n;
        try (Connection c = connection();
                Statement s = c.createStatement()) {
            try {
                // a table keeps the scan's order, and the appender's the results': the result pairs them by position
                s.execute("CREATE TABLE " + input + " AS SELECT * FROM " + scan(files));
                s.execute("CREATE TABLE " + scored + " (" + columns + ")");
                try (DuckDBAppender a = c.unwrap(DuckDBConnection.class).createAppender("main", scored)) {
                    for (int r = 0; r < results.size(); r++) {
                        ResultRow row = results.get(r);
                        a.beginRow();
                        appendOutput(a, outputType, row.output());
                        for (int i = 0; i < scorerIds.size(); i++) {
                            Double score = row.scores().get(i);
                            if (score == null) {
                                a.appendNull();
                            } else {
                                a.append(score.doubleValue());
                            }
                            a.append(row.metadata().get(i));
                        }
                        if (row.error() == null) {
                            a.appendNull();
                        } else {
                            a.append(row.error());
                        }
                        a.endRow();
                    }
                }
                // an input column named as a result column (a dataset's own "output", say) keeps its values as
                // input_<name>
                java.util.Set<String> resultNames = new java.util.HashSet<>(List.of(OUTPUT, ERROR));
                for (String id : scorerIds) {
                    resultNames.add(id + "_score");
                    resultNames.add(id + "_metadata");
                }
                List<String> inputs = new ArrayList<>();
                try (ResultSet rs = s.executeQuery("DESCRIBE " + input)) {
                    while (rs.next()) {
                        String name = rs.getString("column_name");
                        inputs.add(input + "." + quote(name)
                                + (resultNames.contains(name) ? " AS " + quote("input_" + name) : ""));
                    }
                }
                // a positional join scans both tables side by side, in order: neither a hash join on the row
                // number nor a sort by it (the two took most of the result file's time)
                s.execute("COPY (SELECT " + String.join(", ", inputs)
                        + ", " + scored + ".* FROM " + input + " POSITIONAL JOIN " + scored + ") TO "
                        + literal(target)
                        + " (FORMAT parquet, COMPRESSION zstd)");
                List<DatasetColumn> written = new ArrayList<>();
                try (ResultSet rs = s.executeQuery("DESCRIBE SELECT * FROM read_parquet(" + literal(target) + ")")) {
                    while (rs.next()) {
                        written.add(new DatasetColumn(rs.getString("column_name"), rs.getString("column_type")));
                    }
                }
                return new DatasetManager.Shape(results.size(), written);
            } finally {
                s.execute("DROP TABLE IF EXISTS " + input);
                s.execute("DROP TABLE IF EXISTS " + scored);
            }
        }
    }

    /** The output column's type: the one type every answer has, else JSON text. */
    private static String outputType(List<ResultRow> results) {
        String type = null;
        for (ResultRow r : results) {
            Object o = r.output();
            if (o == null) {
                continue;
            }
            String t;
            if (o instanceof String) {
                t = "VARCHAR";
            } else if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) {
                t = "BIGINT";
            } else if (o instanceof Number) {
                t = "DOUBLE";
            } else if (o instanceof Boolean) {
                t = "BOOLEAN";
            } else {
                return "VARCHAR";
            }
            if (type == null) {
                type = t;
            } else if (!type.equals(t)) {
                return type.equals("BIGINT") && t.equals("DOUBLE") || type.equals("DOUBLE") && t.equals("BIGINT")
                        ? "DOUBLE"
                        : "VARCHAR";
            }
        }
        return type == null ? "VARCHAR" : type;
    }

    private static void appendOutput(DuckDBAppender a, String type, @Nullable Object output) throws SQLException {
        if (output == null) {
            a.appendNull();
            return;
        }
        switch (type) {
            case "BIGINT" -> a.append(((Number) output).longValue());
            case "DOUBLE" -> a.append(((Number) output).doubleValue());
            case "BOOLEAN" -> a.append(((Boolean) output).booleanValue());
            default -> a.append(text(output));
        }
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

    private static String literal(Path path) {
        return "'" + path.toAbsolutePath().toString().replace("'", "''") + "'";
    }

    private static String quote(String identifier) {
        return "\"" + identifier.replace("\"", "\"\"") + "\"";
    }
}
