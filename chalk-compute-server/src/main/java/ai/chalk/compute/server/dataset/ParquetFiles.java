package ai.chalk.compute.server.dataset;

import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import com.google.protobuf.ListValue;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Reads and writes the Parquet files of datasets with an embedded DuckDB: schemas and row counts, the conversion of
 * uploaded CSV and JSON lines, previews and summaries. Every statement is the server's own over paths of its blob
 * store; a fresh in-memory engine per operation, with a memory limit, spills to the server's work directory.
 */
final class ParquetFiles {

    /** A preview: the first rows as JSON-like values, and a per-column summary. */
    record Preview(Value rows, Value summary) {}

    /** A file the engine cannot read as its format says (a CSV with no consistent columns, a broken Parquet). */
    static final class UnreadableFileException extends Exception {
        UnreadableFileException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final Path workDir;
    private final String memoryLimit;

    /**
     * @param workDir     where the engine spills and conversions are written before they become blobs
     * @param memoryBytes the engine's memory limit per operation
     */
    ParquetFiles(Path workDir, long memoryBytes) throws IOException {
        this.workDir = workDir;
        this.memoryLimit = Math.max(64, memoryBytes >> 20) + "MB";
        Files.createDirectories(workDir);
        try (var leftovers = Files.list(workDir)) {
            for (Path p : (Iterable<Path>) leftovers::iterator) {
                if (Files.isRegularFile(p)) {
                    Files.deleteIfExists(p); // conversions a previous run left unfinished
                }
            }
        }
    }

    /** A fresh file under the work directory for a conversion's output (the caller deletes it). */
    Path workFile(String name) {
        return workDir.resolve(name + ".parquet");
    }

    /**
     * Converts CSV (with a header line, types detected) or JSON lines at {@code source} to Parquet at {@code target}.
     */
    void convert(Path source, FileFormat format, Path target) throws UnreadableFileException, SQLException {
        String reader = switch (format) {
            case CSV -> "read_csv(" + literal(source) + ", header = true, auto_detect = true)";
            case JSON_LINES -> "read_json(" + literal(source) + ", format = 'newline_delimited')";
            case PARQUET -> throw new IllegalArgumentException("Parquet needs no conversion");
        };
        try (Connection c = open();
                Statement s = c.createStatement()) {
            s.execute("COPY (SELECT * FROM " + reader + ") TO " + literal(target)
                    + " (FORMAT parquet, COMPRESSION zstd)");
        } catch (SQLException e) {
            if (isEngineFailure(e)) {
                throw e;
            }
            throw new UnreadableFileException(
                    "cannot read it as " + (format == FileFormat.CSV ? "CSV" : "JSON lines") + ": "
                            + firstLine(e, source, target),
                    e);
        }
    }

    /** The columns of a Parquet file, in order. */
    List<DatasetColumn> schema(Path parquet) throws UnreadableFileException, SQLException {
        try (Connection c = open();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("DESCRIBE SELECT * FROM read_parquet(" + literal(parquet) + ")")) {
            List<DatasetColumn> out = new ArrayList<>();
            while (rs.next()) {
                out.add(new DatasetColumn(rs.getString("column_name"), rs.getString("column_type")));
            }
            return out;
        } catch (SQLException e) {
            if (isEngineFailure(e)) {
                throw e;
            }
            throw new UnreadableFileException("cannot read it as Parquet: " + firstLine(e, parquet), e);
        }
    }

    /** The rows of a Parquet file (from its metadata). */
    long rows(Path parquet) throws UnreadableFileException, SQLException {
        try (Connection c = open();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM read_parquet(" + literal(parquet) + ")")) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            if (isEngineFailure(e)) {
                throw e;
            }
            throw new UnreadableFileException("cannot read it as Parquet: " + firstLine(e, parquet), e);
        }
    }

    /**
     * The column types whose values are small whatever the file holds, shown as they are; every other (text, blobs,
     * lists, structs, maps, unions) is shown as text, cut: a struct of one 8 MiB string printed whole as well.
     */
    private static final java.util.regex.Pattern FIXED_SIZE = java.util.regex.Pattern.compile(
            "BOOLEAN|U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)|FLOAT|DOUBLE|DECIMAL\\(\\d+,\\d+\\)|DATE|TIME"
                    + "|TIME WITH TIME ZONE|TIMESTAMP(_S|_MS|_NS| WITH TIME ZONE)?|INTERVAL|UUID");

    /** Characters a preview's cell (a value as text) shows; the rest is cut, with {@code ...} after it. */
    static final int PREVIEW_CELL_CHARS = 4096;

    /**
     * The first {@code limit} rows of {@code files} read as one table, and DuckDB's SUMMARIZE of them. Cells of every
     * type but the fixed-size ones are shown as text cut to {@link #PREVIEW_CELL_CHARS} by the engine, before they
     * reach the heap: 100 rows of 8 MiB strings compress to kilobytes in a file, and were 800 MB of the server's heap
     * per preview (in lists and structs too, which were read whole until they were cut as text as well).
     */
    Preview preview(List<Path> files, int limit) throws SQLException {
        String table =
                "read_parquet([" + files.stream().map(ParquetFiles::literal).collect(Collectors.joining(", ")) + "])";
        try (Connection c = open();
                Statement s = c.createStatement()) {
            List<String> cut = new java.util.ArrayList<>();
            try (ResultSet rs = s.executeQuery("DESCRIBE SELECT * FROM " + table)) {
                while (rs.next()) {
                    if (!FIXED_SIZE.matcher(rs.getString("column_type")).matches()) {
                        String column = identifier(rs.getString("column_name"));
                        String text = "CAST(" + column + " AS VARCHAR)";
                        cut.add("CASE WHEN length(" + text + ") > " + PREVIEW_CELL_CHARS + " THEN left(" + text + ", "
                                + PREVIEW_CELL_CHARS + ") || '...' ELSE " + text + " END AS " + column);
                    }
                }
            }
            String select = cut.isEmpty() ? "*" : "* REPLACE (" + String.join(", ", cut) + ")";
            ListValue.Builder rows = ListValue.newBuilder();
            try (ResultSet rs = s.executeQuery("SELECT " + select + " FROM " + table + " LIMIT " + limit)) {
                ResultSetMetaData md = rs.getMetaData();
                while (rs.next()) {
                    Struct.Builder row = Struct.newBuilder();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        row.putFields(md.getColumnName(i), value(rs.getObject(i)));
                    }
                    rows.addValues(Value.newBuilder().setStructValue(row));
                }
            }
            ListValue.Builder columns = ListValue.newBuilder();
            // the summary's min and max of a text column are whole values too
            try (ResultSet rs = s.executeQuery("SUMMARIZE SELECT " + select + " FROM " + table)) {
                ResultSetMetaData md = rs.getMetaData();
                while (rs.next()) {
                    Struct.Builder column = Struct.newBuilder();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        column.putFields(md.getColumnName(i), value(rs.getObject(i)));
                    }
                    columns.addValues(Value.newBuilder().setStructValue(column));
                }
            }
            return new Preview(
                    Value.newBuilder().setListValue(rows).build(),
                    Value.newBuilder()
                            .setStructValue(Struct.newBuilder()
                                    .putFields(
                                            "columns",
                                            Value.newBuilder()
                                                    .setListValue(columns)
                                                    .build()))
                            .build());
        }
    }

    private Connection open() throws SQLException {
        Connection c = DriverManager.getConnection("jdbc:duckdb:");
        try (Statement s = c.createStatement()) {
            s.execute("SET memory_limit = '" + memoryLimit + "'");
            s.execute("SET threads = 2");
            s.execute("SET temp_directory = " + literal(workDir));
            s.execute("SET preserve_insertion_order = true");
            // formats the engine carries built in only: nothing is fetched from the network
            s.execute("SET autoinstall_known_extensions = false");
        } catch (SQLException e) {
            c.close();
            throw e;
        }
        return c;
    }

    /** A JSON-like value for a cell; numbers past 2^53 as text, so no digit is lost in a double. */
    static Value value(Object o) {
        Value.Builder v = Value.newBuilder();
        if (o == null) {
            return v.setNullValue(NullValue.NULL_VALUE).build();
        }
        if (o instanceof Boolean b) {
            return v.setBoolValue(b).build();
        }
        if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) {
            long n = ((Number) o).longValue();
            return Math.abs(n) <= (1L << 53)
                    ? v.setNumberValue(n).build()
                    : v.setStringValue(Long.toString(n)).build();
        }
        if (o instanceof Double || o instanceof Float) {
            double d = ((Number) o).doubleValue();
            return Double.isFinite(d)
                    ? v.setNumberValue(d).build()
                    : v.setStringValue(Double.toString(d)).build();
        }
        if (o instanceof BigInteger || o instanceof BigDecimal) {
            return v.setStringValue(o.toString()).build();
        }
        return v.setStringValue(o.toString()).build();
    }

    /** A failure of the engine itself (memory, disk) rather than of the file it read. */
    private static boolean isEngineFailure(SQLException e) {
        String m = String.valueOf(e.getMessage());
        return m.contains("Out of Memory") || m.contains("No space left") || m.contains("Could not set option");
    }

    /** A column's name as the engine's SQL quotes it. */
    private static String identifier(String name) {
        return "\"" + name.replace("\"", "\"\"") + "\"";
    }

    static String literal(Path path) {
        return "'" + path.toAbsolutePath().toString().replace("'", "''") + "'";
    }

    /**
     * The engine's message on one line, cut at 600 characters (a CSV error lists its sniffer's whole settings), with
     * the server's paths of {@code files} left out: clients learn nothing of the server's disk.
     */
    private static String firstLine(SQLException e, Path... files) {
        String m = String.valueOf(e.getMessage());
        int echo = m.indexOf("LINE 1:");
        if (echo >= 0) {
            m = m.substring(0, echo); // the engine echoes the statement, which holds the server's paths
        }
        for (Path f : files) {
            m = m.replace(f.toAbsolutePath().toString(), "the file");
        }
        m = m.replaceAll("\\s+", " ").trim();
        return m.length() <= 600 ? m : m.substring(0, 600) + "...";
    }
}
