package ai.chalk.compute.sql;

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
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.util.VectorSchemaRootAppender;

/**
 * Reads Parquet result files with DuckDB (an optional dependency, as {@code chalkcompute[sql]} is in Python), in a
 * private in-memory database that reads only the files it is given.
 */
final class ParquetReader {

    private static final long BATCH_ROWS = 64 * 1024;

    private ParquetReader() {}

    /** Every row of the files, in order, as column name to value (JDBC's Java types). */
    static List<Map<String, Object>> rows(List<Path> files) {
        try (Connection c = open();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(select(files))) {
            ResultSetMetaData meta = rs.getMetaData();
            List<Map<String, Object>> rows = new ArrayList<>();
            while (rs.next()) {
                Map<String, Object> row = new LinkedHashMap<>();
                for (int i = 1; i <= meta.getColumnCount(); i++) {
                    row.put(meta.getColumnLabel(i), rs.getObject(i));
                }
                rows.add(row);
            }
            return rows;
        } catch (SQLException e) {
            throw new IllegalStateException("reading the result's Parquet failed: " + e.getMessage(), e);
        }
    }

    /** The files as one Arrow table allocated from {@code allocator}; the caller closes it. */
    static VectorSchemaRoot arrow(List<Path> files, BufferAllocator allocator) {
        try (Connection c = open();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(select(files))) {
            ArrowReader reader;
            try {
                reader = (ArrowReader)
                        rs.unwrap(org.duckdb.DuckDBResultSet.class).arrowExportStream(allocator, BATCH_ROWS);
            } catch (RuntimeException | LinkageError e) {
                throw new IllegalStateException(
                        "Arrow's C data interface is not usable here: add the dependency"
                                + " org.apache.arrow:arrow-c-data and start the JVM with"
                                + " --add-opens=java.base/java.nio=ALL-UNNAMED (Arrow Java needs it on JDK 16+): " + e,
                        e);
            }
            try (reader) {
                VectorSchemaRoot result =
                        VectorSchemaRoot.create(reader.getVectorSchemaRoot().getSchema(), allocator);
                try {
                    // appending needs the target's buffers, even empty ones (a string vector's first offset)
                    result.allocateNew();
                    result.setRowCount(0);
                    while (reader.loadNextBatch()) {
                        VectorSchemaRootAppender.append(result, reader.getVectorSchemaRoot());
                    }
                } catch (RuntimeException e) {
                    result.close();
                    throw e;
                }
                return result;
            }
        } catch (SQLException | java.io.IOException e) {
            throw new IllegalStateException("reading the result's Parquet failed: " + e.getMessage(), e);
        }
    }

    private static Connection open() throws SQLException {
        try {
            Class.forName("org.duckdb.DuckDBDriver");
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(
                    "reading SQL results needs DuckDB: add the dependency"
                            + " org.duckdb:duckdb_jdbc (or use SqlResult.download and a Parquet reader of your choice)",
                    e);
        }
        Connection c = DriverManager.getConnection("jdbc:duckdb:");
        try (Statement s = c.createStatement()) {
            s.execute("SET autoinstall_known_extensions=false");
            s.execute("SET autoload_known_extensions=false");
        }
        return c;
    }

    private static String select(List<Path> files) {
        return "SELECT * FROM read_parquet("
                + files.stream()
                        .map(p -> "'" + p.toAbsolutePath().toString().replace("'", "''") + "'")
                        .collect(Collectors.joining(", ", "[", "]"))
                + ")";
    }
}
