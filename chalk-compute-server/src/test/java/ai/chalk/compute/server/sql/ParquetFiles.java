package ai.chalk.compute.server.sql;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

/** Writes real Parquet files for tests with DuckDB (a database of its own, unlocked, never a query's). */
public final class ParquetFiles {

    private ParquetFiles() {}

    /** Writes the result of {@code select} to {@code file} as Parquet. */
    public static Path write(Path file, String select) throws SQLException {
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (" + select + ") TO '" + file.toString().replace("'", "''") + "' (FORMAT parquet)");
        }
        return file;
    }
}
