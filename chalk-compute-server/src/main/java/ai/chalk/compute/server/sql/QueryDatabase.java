package ai.chalk.compute.server.sql;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;
import org.duckdb.DuckDBConnection;
import org.jspecify.annotations.Nullable;

/**
 * An environment's own DuckDB: an in-memory database holding views over that environment's dataset files and
 * nothing else, shared by its queries (each on a connection of its own) while its datasets stay as they are.
 * Everything is set up before its configuration is locked; from then on it cannot reach any file but those views'
 * files and its output directory ({@code allowed_paths}, {@code allowed_directories}), load or install extensions,
 * or change a setting. Queries cannot change it either: only single SELECT statements run ({@link SelectStatement}),
 * so no query leaves anything behind for the next one.
 *
 * <p>The settings, in one reviewable place, each with its reason:
 * <ul>
 *   <li>{@code autoinstall_known_extensions=false}, {@code autoload_known_extensions=false}: a function of an
 *       extension that is not built in (httpfs, ...) is unknown, never fetched</li>
 *   <li>{@code allow_community_extensions=false}, {@code allow_unsigned_extensions} left off: no foreign code</li>
 *   <li>{@code allowed_paths}: the views' Parquet files; {@code allowed_directories}: the directory results are
 *       written to (only our COPY writes: a SELECT cannot)</li>
 *   <li>{@code memory_limit}, {@code threads}, {@code temp_directory}: the budget and where it spills</li>
 *   <li>{@code enable_external_access=false}: no other file, no network, no ATTACH of files, no extension loading</li>
 *   <li>{@code lock_configuration=true}: none of the above can be changed by a query (SET, RESET, PRAGMA)</li>
 * </ul>
 */
final class QueryDatabase implements AutoCloseable {

    /** The catalog the datasets are in: {@code chalk.datasets.<name>}, {@code chalk.dataset_revisions."<id>"}. */
    static final String CATALOG = "chalk";

    static final String DATASETS = "datasets";
    static final String REVISIONS = "dataset_revisions";

    private final DuckDBConnection root;
    private final Path outDir;

    private QueryDatabase(DuckDBConnection root, Path outDir) {
        this.root = root;
        this.outDir = outDir;
    }

    /**
     * A locked database with a view for each table: {@code chalk.datasets.<name>} for the latest revisions,
     * {@code chalk.dataset_revisions."<id>"} for every revision in {@code tables}; results may be written under
     * {@code outDir} only.
     */
    static QueryDatabase open(
            Collection<DatasetTable> tables, long memoryBytes, int threads, Path tempDir, Path outDir) {
        DuckDBConnection c;
        try {
            c = (DuckDBConnection) DriverManager.getConnection("jdbc:duckdb:");
        } catch (SQLException e) {
            throw new SqlFailure(SqlFailure.Reason.FAILED, "cannot start DuckDB: " + e.getMessage(), e);
        }
        QueryDatabase db = new QueryDatabase(c, outDir);
        try (Statement s = c.createStatement()) {
            List<Path> readable = new ArrayList<>();
            tables.forEach(t -> readable.addAll(t.files()));
            s.execute("SET autoinstall_known_extensions=false");
            s.execute("SET autoload_known_extensions=false");
            s.execute("SET allow_community_extensions=false");
            s.execute("SET memory_limit='" + memoryBytes + " bytes'");
            s.execute("SET threads=" + threads);
            s.execute("SET temp_directory=" + literal(tempDir.toString()));
            s.execute("SET allowed_paths="
                    + list(readable.stream().map(Path::toString).toList()));
            s.execute("SET allowed_directories=" + list(List.of(outDir + "/")));
            s.execute("ATTACH ':memory:' AS " + CATALOG);
            s.execute("CREATE SCHEMA " + CATALOG + "." + DATASETS);
            s.execute("CREATE SCHEMA " + CATALOG + "." + REVISIONS);
            for (DatasetTable t : tables) {
                if (t.files().isEmpty()) {
                    continue;
                }
                String files = list(t.files().stream().map(Path::toString).toList());
                if (t.latest()) {
                    s.execute("CREATE VIEW " + CATALOG + "." + DATASETS + "." + identifier(t.dataset())
                            + " AS SELECT * FROM read_parquet(" + files + ")");
                }
                s.execute("CREATE VIEW " + CATALOG + "." + REVISIONS + "." + identifier(t.revisionId())
                        + " AS SELECT * FROM read_parquet(" + files + ")");
            }
            s.execute("SET enable_external_access=false");
            s.execute("SET lock_configuration=true");
        } catch (SQLException e) {
            db.close();
            throw new SqlFailure(SqlFailure.Reason.FAILED, "preparing the query database failed: " + e.getMessage(), e);
        }
        return db;
    }

    /** Where results may be written: each query writes only beneath a name of its own here. */
    Path outDir() {
        return outDir;
    }

    /** A connection of its own for one query. */
    Session session() {
        try {
            return new Session(root.duplicate());
        } catch (SQLException e) {
            throw new SqlFailure(SqlFailure.Reason.FAILED, "cannot connect to DuckDB: " + e.getMessage(), e);
        }
    }

    /** One query's connection: check, run, plan, describe, cancel. */
    static final class Session implements AutoCloseable {

        private final Connection connection;
        private volatile @Nullable Statement running;
        private volatile boolean canceled;
        private volatile @Nullable Duration timedOutAfter;

        private Session(Connection connection) {
            this.connection = connection;
        }

        /** Checks {@code sql} is one query; see {@link SelectStatement#check}. */
        SelectStatement check(String sql) {
            return SelectStatement.check(connection, sql);
        }

        /** Writes the query's result to one Parquet file; returns how many rows it has. */
        long copyToFile(SelectStatement query, Path file) {
            return copy(query, literal(file.toString()) + " (FORMAT parquet, COMPRESSION zstd)");
        }

        /** Writes the query's result as Parquet shards of about {@code shardBytes} into {@code dir}; returns the rows. */
        long copyToShards(SelectStatement query, Path dir, long shardBytes) {
            return copy(
                    query,
                    literal(dir.toString()) + " (FORMAT parquet, COMPRESSION zstd, FILE_SIZE_BYTES " + shardBytes
                            + ", FILENAME_PATTERN 'shard_{i}', OVERWRITE_OR_IGNORE)");
        }

        private long copy(SelectStatement query, String target) {
            try (Statement s = connection.createStatement()) {
                running = s;
                if (canceled) {
                    throw canceledFailure();
                }
                // COPY's update count is the rows it wrote
                return s.executeUpdate("COPY (" + query.subquery() + ") TO " + target);
            } catch (SQLException e) {
                throw failure(e);
            } finally {
                running = null;
            }
        }

        /** DuckDB's plan of the query. */
        String explain(SelectStatement query) {
            StringBuilder plan = new StringBuilder();
            try (Statement s = connection.createStatement();
                    ResultSet rs = s.executeQuery("EXPLAIN " + query.subquery())) {
                while (rs.next()) {
                    plan.append(rs.getString(2)).append('\n');
                }
            } catch (SQLException e) {
                throw failure(e);
            }
            return plan.toString();
        }

        /** The column names and DuckDB types of a view in {@code schema}. */
        List<Column> columns(String schema, String table) {
            List<Column> out = new ArrayList<>();
            try (var ps = connection.prepareStatement("SELECT column_name, data_type FROM information_schema.columns"
                    + " WHERE table_catalog = ? AND table_schema = ? AND table_name = ? ORDER BY ordinal_position")) {
                ps.setString(1, CATALOG);
                ps.setString(2, schema);
                ps.setString(3, table);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new Column(rs.getString(1), rs.getString(2)));
                    }
                }
            } catch (SQLException e) {
                throw failure(e);
            }
            return out;
        }

        /** Stops the query running now, if any, and any it would start. */
        void cancel() {
            canceled = true;
            Statement s = running;
            if (s != null) {
                try {
                    s.cancel();
                } catch (SQLException ignored) {
                    // it finished meanwhile
                }
            }
        }

        /** Stops the query as {@link #cancel} does, saying it ran past {@code limit}. */
        void timeOut(Duration limit) {
            timedOutAfter = limit;
            cancel();
        }

        private SqlFailure canceledFailure() {
            Duration limit = timedOutAfter;
            if (limit != null) {
                return new SqlFailure(
                        SqlFailure.Reason.TIMED_OUT,
                        "the query ran past the server's time limit of " + limit.toSeconds()
                                + " s for one query; filter or aggregate more, or query a smaller revision");
            }
            return new SqlFailure(SqlFailure.Reason.CANCELED, "canceled: the query was canceled before it finished");
        }

        /** DuckDB's message, classified by its error type (the text before "Error:"). */
        private SqlFailure failure(SQLException e) {
            if (canceled) {
                return canceledFailure();
            }
            return classify(e);
        }

        @Override
        public void close() {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // nothing of a query's connection needs saving
            }
        }
    }

    /** A column of a table: its name and DuckDB type. */
    record Column(String name, String type) {}

    private static SqlFailure classify(SQLException e) {
        String message = String.valueOf(e.getMessage()).strip();
        if (message.startsWith("Permission Error")) {
            return new SqlFailure(
                    SqlFailure.Reason.FORBIDDEN,
                    message + "\n(SQL here reads only your environment's datasets: chalk.datasets.<name> or"
                            + " chalk.dataset_revisions.\"<revision id>\")");
        }
        if (message.startsWith("Out of Memory Error")) {
            return new SqlFailure(
                    SqlFailure.Reason.TOO_LARGE, message + "\n(raise max_memory_bytes, or aggregate or filter more)");
        }
        if (message.startsWith("INTERRUPT") || message.contains("Interrupted")) {
            return new SqlFailure(SqlFailure.Reason.CANCELED, "canceled: the query was canceled before it finished");
        }
        if (message.startsWith("Parser Error")
                || message.startsWith("Binder Error")
                || message.startsWith("Catalog Error")
                || message.startsWith("Conversion Error")
                || message.startsWith("Invalid Input Error")
                || message.startsWith("Out of Range Error")
                || message.startsWith("Not implemented Error")
                || message.startsWith("Invalid Error")
                || message.startsWith("Constraint Error")) {
            return new SqlFailure(SqlFailure.Reason.INVALID, message);
        }
        return new SqlFailure(SqlFailure.Reason.FAILED, message, e);
    }

    static String identifier(String name) {
        return "\"" + name.replace("\"", "\"\"") + "\"";
    }

    static String literal(String value) {
        return "'" + value.replace("'", "''") + "'";
    }

    private static String list(List<String> values) {
        return values.stream().map(QueryDatabase::literal).collect(Collectors.joining(", ", "[", "]"));
    }

    @Override
    public void close() {
        try {
            root.close();
        } catch (SQLException ignored) {
            // an in-memory database has nothing to save
        }
    }
}
