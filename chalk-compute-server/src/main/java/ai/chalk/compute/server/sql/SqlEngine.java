package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Runs one query of an environment on the environment's locked {@link QueryDatabase}, writing the result as Parquet
 * under the database's output directory; plans queries; describes the environment's tables.
 */
public final class SqlEngine implements AutoCloseable {

    private final DatasetTables datasets;
    private final SqlOptions options;
    /**
     * Stops queries at their time limit: a thread of its own, since the common pool that delayed executors use
     * otherwise is where blocking work of the server waits, and a deadline queued behind it fired late or never.
     */
    private static final ScheduledExecutorService DEADLINES = DaemonThreads.timer("chalk-sql-deadlines");
    /** The data directory, which holds {@code scratch} and the blobs the tables read. */
    private final String dataDir;

    private final QueryDatabases databases;

    /** An engine over {@code datasets} that writes results and spills under {@code scratch} (private to the server). */
    public SqlEngine(DatasetTables datasets, SqlOptions options, Path scratch) throws IOException {
        this.dataDir = scratch.toAbsolutePath().getParent().toString();
        this.datasets = datasets;
        this.options = options;
        Files.createDirectories(scratch);
        deleteTree(scratch, false); // what a stopped server left behind
        this.databases = new QueryDatabases(scratch, options.threads(), options.memoryBudgetBytes());
    }

    /**
     * What a query wrote: its Parquet files (under a directory the caller deletes with {@link #discard}).
     *
     * @param dir   the directory holding them
     * @param files the result files, in order
     * @param rows  how many rows
     * @param took  how long it ran
     */
    public record Output(Path dir, List<Path> files, long rows, Duration took) {}

    /** The limits. */
    public SqlOptions options() {
        return options;
    }

    /**
     * Runs {@code sql} over {@code environment}'s datasets.
     *
     * @param memoryBytes DuckDB's memory limit for it (shared with the environment's queries of the same limit
     *                    running at the same time)
     * @param sharded     whether the result is split into shards of {@link SqlOptions#shardBytes} (persisted) or
     *                    written as one file
     * @param onCancel    receives what cancels the query while it runs
     * @throws SqlFailure when the query is refused or fails
     */
    public Output run(String environment, String sql, long memoryBytes, boolean sharded, Consumer<Runnable> onCancel) {
        try {
            return runOnce(environment, sql, memoryBytes, sharded, onCancel);
        } catch (SqlFailure e) {
            throw withoutPaths(e);
        }
    }

    /**
     * {@code e} with the server's data directory written {@code <data-dir>}: DuckDB names the files it failed to
     * read or write (blobs, spill files, results), and where the server keeps its data is the operator's business,
     * as the datasets' errors have it.
     */
    private SqlFailure withoutPaths(SqlFailure e) {
        String message = String.valueOf(e.getMessage());
        return message.contains(dataDir) ? new SqlFailure(e.reason(), message.replace(dataDir, "<data-dir>"), e) : e;
    }

    private Output runOnce(
            String environment, String sql, long memoryBytes, boolean sharded, Consumer<Runnable> onCancel) {
        long start = System.nanoTime();
        try (QueryDatabases.Lease lease =
                        databases.lease(environment, memoryBytes, datasets.completedRevisions(environment));
                QueryDatabase.Session session = lease.database().session()) {
            onCancel.accept(session::cancel);
            Duration limit = options.timeLimit();
            ScheduledFuture<?> deadline =
                    DEADLINES.schedule(() -> session.timeOut(limit), limit.toMillis(), TimeUnit.MILLISECONDS);
            try {
                return run(session, lease, sql, sharded, start);
            } finally {
                deadline.cancel(false);
            }
        }
    }

    private Output run(
            QueryDatabase.Session session, QueryDatabases.Lease lease, String sql, boolean sharded, long start) {
        SelectStatement query = session.check(sql);
        // DuckDB lets COPY make a directory only in an allowed one: each query writes beneath a name of its own
        Path dir = lease.database().outDir().resolve(UUID.randomUUID().toString());
        try {
            long rows;
            List<Path> files;
            if (sharded) {
                rows = session.copyToShards(query, dir, options.shardBytes());
                try (Stream<Path> listed = Files.list(dir)) {
                    files = listed.filter(p -> p.getFileName().toString().endsWith(".parquet"))
                            .sorted(Comparator.comparing(SqlEngine::shardNumber))
                            .toList();
                }
            } else {
                Files.createDirectories(dir);
                Path file = dir.resolve("result.parquet");
                rows = session.copyToFile(query, file);
                files = List.of(file);
            }
            return new Output(dir, files, rows, Duration.ofNanos(System.nanoTime() - start));
        } catch (IOException e) {
            discard(dir);
            throw new SqlFailure(SqlFailure.Reason.FAILED, "reading the query's result failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            discard(dir);
            throw e;
        }
    }

    private static int shardNumber(Path p) {
        String name = p.getFileName().toString().replaceAll("\\D", "");
        return name.isEmpty() ? 0 : Integer.parseInt(name);
    }

    /** DuckDB's plan for {@code sql} over {@code environment}'s datasets, without running it. */
    public String explain(String environment, String sql) {
        try (QueryDatabases.Lease lease = databases.lease(
                        environment, options.defaultMemoryBytes(), datasets.completedRevisions(environment));
                QueryDatabase.Session session = lease.database().session()) {
            return session.explain(session.check(sql));
        }
    }

    /**
     * A table of the environment as GetTables lists it.
     *
     * @param source the revision it shows, whose Arrow schema is read only when asked for
     */
    public record TableDescription(
            String schema, String table, List<QueryDatabase.Column> columns, DatasetTable source) {

        /** Its serialized Arrow schema, read now; empty when unknown. */
        public byte[] arrowSchema() {
            return source.arrowSchema();
        }
    }

    /** Every table of {@code environment}: its datasets (latest revision) and each completed revision. */
    public List<TableDescription> tables(String environment) {
        List<DatasetTable> all = datasets.completedRevisions(environment);
        List<TableDescription> out = new ArrayList<>();
        try (QueryDatabases.Lease lease = databases.lease(environment, options.defaultMemoryBytes(), all);
                QueryDatabase.Session session = lease.database().session()) {
            for (DatasetTable t : all) {
                if (t.files().isEmpty()) {
                    continue;
                }
                if (t.latest()) {
                    out.add(new TableDescription(
                            QueryDatabase.DATASETS,
                            t.dataset(),
                            session.columns(QueryDatabase.DATASETS, t.dataset()),
                            t));
                }
                out.add(new TableDescription(
                        QueryDatabase.REVISIONS,
                        t.revisionId(),
                        session.columns(QueryDatabase.REVISIONS, t.revisionId()),
                        t));
            }
        }
        return out;
    }

    /** Deletes what a query wrote. */
    public void discard(Path dir) {
        deleteQuietly(dir);
    }

    static void deleteQuietly(Path dir) {
        try {
            deleteTree(dir, true);
        } catch (IOException ignored) {
            // removed at the next start
        }
    }

    private static void deleteTree(Path dir, boolean self) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                if (self || !p.equals(dir)) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /** Closes the environments' databases (once the queries using them end). */
    @Override
    public void close() {
        databases.close();
    }
}
