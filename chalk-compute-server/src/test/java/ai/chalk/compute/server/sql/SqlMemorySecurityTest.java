package ai.chalk.compute.server.sql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant tries to give DuckDB more memory than the host has: every memory limit (and every change of its datasets
 * while a query runs) got a DuckDB database of its own, each allowed its limit, with nothing bounding them together —
 * twenty queries at once asking for 8 GiB less a byte each were 160 GiB of allowances on a 23 GB host. The databases
 * alive at once are now bounded in number and in memory, one environment's at most half, and a query past that is
 * refused saying which bound it met, while queries that fit (sharing a database, or after others ended) run.
 */
class SqlMemorySecurityTest {

    private static final long MIB = 1L << 20;
    /** Runs until canceled: DuckDB does not shortcut a sum over a range. */
    private static final String SLOW = "SELECT sum(range) FROM range(100000000000)";

    @TempDir
    Path dir;

    private SqlEngine engine;
    private final List<Running> running = new ArrayList<>();

    /** A query running on a thread of its own until canceled. */
    private record Running(CompletableFuture<SqlEngine.Output> done, AtomicReference<Runnable> cancel) {}

    @AfterEach
    void stop() {
        running.forEach(r -> {
            Runnable c = r.cancel().get();
            if (c != null) {
                c.run();
            }
            r.done().handle((o, e) -> null).join();
        });
        engine.close();
    }

    @Test
    void theDatabasesAliveAtOnceAreBoundedAndOneEnvironmentHoldsHalf() throws Exception {
        Path data = Files.createDirectories(dir.resolve("blobs"));
        Path numbers = ParquetFiles.write(data.resolve("n.parquet"), "SELECT range AS x FROM range(10)");
        DatasetTables tables = environment -> List.of(new DatasetTable("numbers", "rev_1", List.of(numbers), true));
        // a query gets 64 MiB unless it asks; all together 256 MiB, an environment 128 MiB
        SqlOptions options =
                new SqlOptions(64 * MIB, 128 * MIB, 1, 16 * MIB, 128 * MIB, 2, 256 * MIB, Duration.ofMinutes(30));
        engine = new SqlEngine(tables, options, dir.resolve("scratch"));

        start("dev", 64 * MIB);
        assertThatThrownBy(() -> engine.run("dev", "SELECT 1", 96 * MIB, false, c -> {}))
                .isInstanceOf(SqlFailure.class)
                .satisfies(e -> assertThat(((SqlFailure) e).reason()).isEqualTo(SqlFailure.Reason.TOO_LARGE))
                .hasMessageContaining("this environment's queries have 1 databases with 64 MiB of memory between them")
                .hasMessageContaining("ask for the same max_memory_bytes as queries running now");
        // the same limit shares the running query's database
        assertThat(engine.run("dev", "SELECT count(*) FROM chalk.datasets.numbers", 64 * MIB, false, c -> {})
                        .rows())
                .isEqualTo(1);

        start("prod", 128 * MIB);
        assertThatThrownBy(() -> engine.run("staging", "SELECT 1", 96 * MIB, false, c -> {}))
                .hasMessageContaining("the server's queries have 2 databases with 192 MiB of memory between them");

        // once the queries end, their databases make room
        for (Running r : running) {
            r.cancel().get().run();
            assertThatThrownBy(() -> r.done().get(30, TimeUnit.SECONDS)).hasMessageContaining("canceled");
        }
        running.clear();
        assertThat(engine.run("staging", "SELECT 1", 96 * MIB, false, c -> {}).rows())
                .isEqualTo(1);
        assertThat(engine.run("dev", "SELECT 1", 128 * MIB, false, c -> {}).rows())
                .isEqualTo(1);
    }

    @Test
    void aQueryThatNeverEndsIsStoppedAtTheTimeLimit() throws Exception {
        Path data = Files.createDirectories(dir.resolve("blobs"));
        Path numbers = ParquetFiles.write(data.resolve("n.parquet"), "SELECT range AS x FROM range(10)");
        DatasetTables tables = environment -> List.of(new DatasetTable("numbers", "rev_1", List.of(numbers), true));
        engine = new SqlEngine(
                tables,
                SqlOptions.defaults().withMemoryBudgetBytes(16L << 30).withTimeLimit(Duration.ofSeconds(2)),
                dir.resolve("scratch"));
        long begun = System.nanoTime();
        // nothing outside the query is touched, and it would run for good
        assertThatThrownBy(() -> engine.run(
                        "dev",
                        "SELECT count(*) FROM range(1e18::BIGINT) a, range(1e18::BIGINT) b",
                        MIB * 64,
                        false,
                        c -> {}))
                .isInstanceOf(SqlFailure.class)
                .satisfies(e -> assertThat(((SqlFailure) e).reason()).isEqualTo(SqlFailure.Reason.TIMED_OUT))
                .hasMessageContaining("ran past the server's time limit of 2 s for one query");
        assertThat(Duration.ofNanos(System.nanoTime() - begun)).isLessThan(Duration.ofSeconds(30));
        assertThat(engine.run("dev", "SELECT count(*) FROM chalk.datasets.numbers", MIB * 64, false, c -> {})
                        .rows())
                .as("the next query runs")
                .isEqualTo(1);
    }

    @Test
    void aFailureNamesNoPathOfTheServersDataDirectory() throws Exception {
        Path data = Files.createDirectories(dir.resolve("data"));
        Path blobs = Files.createDirectories(data.resolve("blobs"));
        Path numbers = ParquetFiles.write(blobs.resolve("n.parquet"), "SELECT range AS x FROM range(10)");
        DatasetTables tables = environment -> List.of(new DatasetTable("numbers", "rev_1", List.of(numbers), true));
        engine =
                new SqlEngine(tables, SqlOptions.defaults().withMemoryBudgetBytes(16L << 30), data.resolve("sql-work"));
        Files.delete(numbers); // a blob gone from under the query
        assertThatThrownBy(() ->
                        engine.run("dev", "SELECT count(*) FROM chalk.datasets.numbers", MIB * 64, false, c -> {}))
                .isInstanceOf(SqlFailure.class)
                .satisfies(e -> assertThat(e.getMessage())
                        .doesNotContain(data.toString())
                        .contains("<data-dir>"));
    }

    /** Starts {@link #SLOW} in {@code environment} with {@code memory}, and returns once DuckDB runs it. */
    private void start(String environment, long memory) throws Exception {
        AtomicReference<Runnable> cancel = new AtomicReference<>();
        CountDownLatch began = new CountDownLatch(1);
        CompletableFuture<SqlEngine.Output> done =
                CompletableFuture.supplyAsync(() -> engine.run(environment, SLOW, memory, false, c -> {
                    cancel.set(c);
                    began.countDown();
                }));
        running.add(new Running(done, cancel));
        assertThat(began.await(30, TimeUnit.SECONDS)).isTrue();
        Thread.sleep(200); // past its check, into the sum
        assertThat(done).isNotDone();
    }
}
