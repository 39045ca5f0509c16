package ai.chalk.compute.server.sql;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Runs one query of an environment in its own {@link QueryDatabase}, writing the result as Parquet under a scratch
 * directory; plans queries; describes the environment's tables. Holds no state between queries.
 */
public final class SqlEngine {

    private final DatasetTables datasets;
    private final SqlOptions options;
    private final Path scratch;

    /** An engine over {@code datasets} that writes results and spills under {@code scratch} (private to the server). */
    public SqlEngine(DatasetTables datasets, SqlOptions options, Path scratch) throws IOException {
        this.datasets = datasets;
        this.options = options;
        this.scratch = scratch;
        Files.createDirectories(scratch);
        deleteTree(scratch, false); // what a stopped server left behind
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
     * @param memoryBytes DuckDB's memory limit for it
     * @param sharded     whether the result is split into shards of {@link SqlOptions#shardBytes} (persisted) or
     *                    written as one file
     * @param onCancel    receives what cancels the query while it runs
     * @throws SqlFailure when the query is refused or fails
     */
    public Output run(String environment, String sql, long memoryBytes, boolean sharded, Consumer<Runnable> onCancel) {
        long start = System.nanoTime();
        Path dir = scratch.resolve(UUID.randomUUID().toString());
        Path temp = dir.resolve("spill");
        // DuckDB lets COPY make files in a directory only when the directory's parent is allowed: the shards go in
        // out/shards and out/ is allowed, holding nothing else
        Path out = dir.resolve("out");
        Path result = sharded ? out.resolve("shards") : dir.resolve("result.parquet");
        try {
            Files.createDirectories(temp);
            if (sharded) {
                Files.createDirectories(result);
            }
        } catch (IOException e) {
            throw new SqlFailure(
                    SqlFailure.Reason.FAILED, "cannot make room for the query's result: " + e.getMessage());
        }
        try (QueryDatabase db = QueryDatabase.open(
                tablesFor(environment, sql),
                memoryBytes,
                options.threads(),
                temp,
                sharded ? List.of() : List.of(result),
                sharded ? List.of(out) : List.of())) {
            onCancel.accept(db::cancel);
            SelectStatement query = db.check(sql);
            long rows;
            List<Path> files;
            if (sharded) {
                rows = db.copyToShards(query, result, options.shardBytes());
                try (Stream<Path> listed = Files.list(result)) {
                    files = listed.filter(p -> p.getFileName().toString().endsWith(".parquet"))
                            .sorted(Comparator.comparing(SqlEngine::shardNumber))
                            .toList();
                }
            } else {
                rows = db.copyToFile(query, result);
                files = List.of(result);
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
        Path dir = scratch.resolve(UUID.randomUUID().toString());
        try (QueryDatabase db = QueryDatabase.open(
                tablesFor(environment, sql), options.defaultMemoryBytes(), 1, dir, List.of(), List.of())) {
            return db.explain(db.check(sql));
        }
    }

    /** A table of the environment as GetTables lists it. */
    public record TableDescription(String schema, String table, List<QueryDatabase.Column> columns) {}

    /** Every table of {@code environment}: its datasets (latest revision) and each completed revision. */
    public List<TableDescription> tables(String environment) {
        List<DatasetTable> all = datasets.completedRevisions(environment);
        List<TableDescription> out = new ArrayList<>();
        Path dir = scratch.resolve(UUID.randomUUID().toString());
        try (QueryDatabase db = QueryDatabase.open(all, options.defaultMemoryBytes(), 1, dir, List.of(), List.of())) {
            for (DatasetTable t : all) {
                if (t.files().isEmpty()) {
                    continue;
                }
                if (t.latest()) {
                    out.add(new TableDescription(
                            QueryDatabase.DATASETS, t.dataset(), db.columns(QueryDatabase.DATASETS, t.dataset())));
                }
                out.add(new TableDescription(
                        QueryDatabase.REVISIONS, t.revisionId(), db.columns(QueryDatabase.REVISIONS, t.revisionId())));
            }
        }
        return out;
    }

    /**
     * The tables a query may name: every latest revision (so an unknown name is DuckDB's "did you mean"), and the
     * revisions whose id the query mentions (each view reads its files' footers, so not all of them).
     */
    private List<DatasetTable> tablesFor(String environment, String sql) {
        String text = sql.toLowerCase(Locale.ROOT);
        return datasets.completedRevisions(environment).stream()
                .filter(t -> t.latest() || text.contains(t.revisionId().toLowerCase(Locale.ROOT)))
                .toList();
    }

    /** Deletes what a query wrote. */
    public void discard(Path dir) {
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
}
