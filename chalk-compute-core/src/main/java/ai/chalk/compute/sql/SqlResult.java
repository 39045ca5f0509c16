package ai.chalk.compute.sql;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * The result of a finished SQL query: Parquet, either returned inline ({@link SQLClient#query(String)}) or persisted
 * on the server as shards behind signed links ({@code query(sql, true)}, and every {@link SqlJob}).
 *
 * <pre>{@code
 * SqlResult result = sql.query("SELECT region, count(*) AS n FROM chalk.datasets.orders GROUP BY region");
 * for (Map<String, Object> row : result.rows()) { ... }
 * try (VectorSchemaRoot table = result.toArrow(allocator)) { ... }
 * List<Path> files = result.download(Path.of("results"));
 * }</pre>
 *
 * <p>{@link #rows()} and {@link #toArrow} need DuckDB ({@code org.duckdb:duckdb_jdbc}); {@code toArrow} also
 * {@code org.apache.arrow:arrow-c-data} and the JVM option {@code --add-opens=java.base/java.nio=ALL-UNNAMED}. Both
 * load the whole result into memory; {@link #download} streams it to disk and needs neither. Keep the client open
 * while using a result: refreshing an expired link asks the server.
 */
public final class SqlResult {

    private final SQLClient client;
    private final String queryId;
    private final String summary;
    private final byte @org.jspecify.annotations.Nullable [] inline;
    private volatile List<String> links;

    SqlResult(
            SQLClient client,
            String queryId,
            String summary,
            byte @org.jspecify.annotations.Nullable [] inline,
            List<String> links) {
        this.client = client;
        this.queryId = queryId;
        this.summary = summary;
        this.inline = inline;
        this.links = List.copyOf(links);
    }

    /** The query's id: poll or resume it with {@link SQLClient#getJob}. */
    public String queryId() {
        return queryId;
    }

    /**
     * What the server says the query did (resource group, memory limit, rows, files, time), e.g.
     * {@code resource group: batch; memory limit: 1073741824 bytes; rows: 3; files: 1; took: 12 ms}; empty when the
     * server sent none.
     */
    public String summary() {
        return summary;
    }

    /** Whether the result is persisted on the server (links to shards) rather than returned inline. */
    public boolean isPersisted() {
        return inline == null;
    }

    /** The signed download links of the shards of a persisted result (they expire; {@link #download} refreshes). */
    public List<String> links() {
        return links;
    }

    /** The inline Parquet bytes, if the result was returned inline. */
    public Optional<byte[]> parquet() {
        return inline == null ? Optional.empty() : Optional.of(inline.clone());
    }

    /**
     * Every row, in order, as column name to value (Java types as DuckDB's JDBC driver gives them). Loads the whole
     * result into memory.
     *
     * @throws IllegalStateException when DuckDB is not on the class path, saying which dependency to add
     */
    public List<Map<String, Object>> rows() {
        return withFiles(ParquetReader::rows);
    }

    /**
     * The whole result as one Arrow table allocated from {@code allocator}; close it when done.
     *
     * @throws IllegalStateException when DuckDB or Arrow's C data interface is not usable, saying what to add
     */
    public VectorSchemaRoot toArrow(BufferAllocator allocator) {
        Objects.requireNonNull(allocator, "allocator");
        return withFiles(files -> ParquetReader.arrow(files, allocator));
    }

    /**
     * Streams every shard of the result to {@code dir} (created if missing) as {@code part-00000.parquet},
     * {@code part-00001.parquet}, ... (an inline result is one part), refreshing links that have expired. Refuses to
     * overwrite: when any of those files exists already nothing is downloaded and the exception names it; use a fresh
     * directory to retry a download that failed part way.
     *
     * @return the files written, in order
     * @throws UncheckedIOException when a file exists already, a link is refused after refreshing, or writing fails
     */
    public List<Path> download(Path dir) {
        Objects.requireNonNull(dir, "dir");
        int parts = inline != null ? 1 : links.size();
        List<Path> targets = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            Path target = dir.resolve(String.format("part-%05d.parquet", i));
            if (Files.exists(target)) {
                throw new UncheckedIOException(new java.nio.file.FileAlreadyExistsException(
                        target.toString(), null, "refusing to overwrite it: download into a fresh directory"));
            }
            targets.add(target);
        }
        try {
            Files.createDirectories(dir);
            if (inline != null) {
                Files.write(targets.get(0), inline, java.nio.file.StandardOpenOption.CREATE_NEW);
                return targets;
            }
            for (int i = 0; i < parts; i++) {
                int shard = i;
                client.downloads().fetch(targets.get(i), () -> links.get(shard), this::refreshLinks);
            }
            return targets;
        } catch (IOException e) {
            throw new UncheckedIOException("downloading the result of " + queryId + " failed: " + e.getMessage(), e);
        }
    }

    /** Asks the server for fresh links to the same shards (PollSqlQuery). */
    private void refreshLinks() {
        SqlResult fresh = client.getJob(queryId).result().orElseThrow();
        this.links = fresh.links;
    }

    private <T> T withFiles(java.util.function.Function<List<Path>, T> read) {
        Path temp;
        try {
            temp = Files.createTempDirectory("chalk-sql-" + queryId);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            return read.apply(download(temp));
        } finally {
            try (Stream<Path> walk = Files.walk(temp)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            } catch (IOException ignored) {
                // a temporary directory the system cleans
            }
        }
    }

    @Override
    public String toString() {
        return "SqlResult[" + queryId
                + (inline != null ? ", inline " + inline.length + " bytes" : ", " + links.size() + " shards") + "]";
    }
}
