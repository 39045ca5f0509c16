package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.dataset.DatasetManager;
import ai.chalk.compute.server.evaluation.RunTables.ResultRow;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run's result table on a real embedded DuckDB, from a real Parquet input to the Parquet result file read back:
 * rows finished out of order and from several threads are appended in row order while the run goes on, the output
 * column's type is the one every answer has (starting over when a later answer does not fit the type chosen from the
 * first ones), and a run whose every row failed still has its file.
 */
class RunResultTest {

    @TempDir
    Path dir;

    private RunTables tables;

    @BeforeEach
    void open() {
        tables = new RunTables(dir.resolve("work"));
    }

    @AfterEach
    void close() {
        tables.close();
    }

    @Test
    void rowsFinishedOutOfOrderFromManyThreadsAreAppendedInRowOrderWhileTheRunGoesOn() throws Exception {
        int n = 5_000;
        Path input = input(n);
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            order.add(i);
        }
        Collections.shuffle(order, new java.util.Random(7));
        try (RunResult result = tables.begin(List.of(input), List.of("exact"), ForkJoinPool.commonPool())) {
            List<Map<String, @Nullable Object>> rows = result.rows(memory());
            assertThat(rows).hasSize(n);
            assertThat(rows.get(42)).containsEntry("x", 42L).containsEntry("expected", "e42");
            ResultRow[] results = new ResultRow[n];
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int from = 0; from < n; from += 50) {
                    List<Integer> batch = order.subList(from, Math.min(n, from + 50));
                    done.add(pool.submit(() -> {
                        for (int i : batch) {
                            results[i] = new ResultRow((long) i * 2, List.of(1.0), List.of("{\"i\":" + i + "}"), null);
                        }
                        result.advance(results);
                    }));
                }
                for (Future<?> f : done) {
                    f.get();
                }
            } finally {
                pool.shutdownNow();
            }
            // every row was appended before the end: what the run's end waits on is the file alone
            assertThat(result.appended()).isEqualTo(n);

            Path file = dir.resolve("result.parquet");
            DatasetManager.Shape shape = result.finish(results, file);

            assertThat(shape.rows()).isEqualTo(n);
            assertThat(shape.columns())
                    .extracting(DatasetColumn::name)
                    .containsExactly("x", "expected", "output", "exact_score", "exact_metadata", "error");
            assertThat(shape.columns()).extracting(DatasetColumn::type).contains("BIGINT");
            List<List<Object>> read = read(file, "SELECT x, output, exact_metadata FROM ");
            for (int i = 0; i < n; i++) {
                assertThat(read.get(i)).containsExactly((long) i, (long) i * 2, "{\"i\":" + i + "}");
            }
        }
    }

    @Test
    void answersOfSeveralTypesAreWrittenAsJsonTextWhateverTheirOrder() throws Exception {
        // an integer, a fraction, then a text: the fraction once made the column DOUBLE and the text failed the run
        Path input = input(3);
        try (RunResult result = tables.begin(List.of(input), List.of("s"), ForkJoinPool.commonPool())) {
            ResultRow[] results = {row(1L), row(2.5), row("three")};
            result.advance(results);

            result.finish(results, dir.resolve("mixed.parquet"));

            assertThat(read(dir.resolve("mixed.parquet"), "SELECT output FROM "))
                    .containsExactly(List.of("1"), List.of("2.5"), List.of("three"));
        }
    }

    @Test
    void aLaterAnswerThatDoesNotFitTheTypeOfTheFirstOnesStartsTheTableOver() throws Exception {
        Path input = input(4);
        try (RunResult result = tables.begin(List.of(input), List.of("s"), ForkJoinPool.commonPool())) {
            ResultRow[] results = new ResultRow[4];
            results[0] = row(10L);
            results[1] = row(11L);
            result.advance(results); // appended as integers
            assertThat(result.appended()).isEqualTo(2);
            results[2] = row(12.5);
            results[3] = row(13L);
            result.advance(results);

            DatasetManager.Shape shape = result.finish(results, dir.resolve("widened.parquet"));

            assertThat(shape.columns()).contains(new DatasetColumn("output", "DOUBLE"));
            assertThat(read(dir.resolve("widened.parquet"), "SELECT output FROM "))
                    .containsExactly(List.of(10.0), List.of(11.0), List.of(12.5), List.of(13.0));
        }
    }

    @Test
    void aRunWhoseEveryRowFailedStillWritesItsRowsAndWhy() throws Exception {
        Path input = input(2);
        try (RunResult result = tables.begin(List.of(input), List.of("s"), ForkJoinPool.commonPool())) {
            ResultRow failed = new ResultRow(null, Arrays.asList((Double) null), List.of("{}"), "task: boom");
            ResultRow[] results = {failed, failed};
            result.advance(results); // no answer yet: nothing to choose the output's type from

            DatasetManager.Shape shape = result.finish(results, dir.resolve("failed.parquet"));

            assertThat(shape.columns()).contains(new DatasetColumn("output", "VARCHAR"));
            assertThat(read(dir.resolve("failed.parquet"), "SELECT x, output, s_score, error FROM "))
                    .containsExactly(
                            Arrays.asList(0L, null, null, "task: boom"), Arrays.asList(1L, null, null, "task: boom"));
        }
    }

    @Test
    void closingDropsTheRunsTablesFromTheSharedEngine() throws Exception {
        Path input = input(2);
        RunResult result = tables.begin(List.of(input), List.of("s"), ForkJoinPool.commonPool());
        ResultRow[] results = {row(1L), row(2L)};
        result.advance(results);
        result.close();
        result.close(); // twice is harmless

        // the next run's tables are its own, and the engine still serves it
        try (RunResult next = tables.begin(List.of(input), List.of("s"), ForkJoinPool.commonPool())) {
            assertThat(next.rows(memory())).hasSize(2);
            next.advance(results);
            assertThat(next.finish(results, dir.resolve("next.parquet")).rows()).isEqualTo(2);
        }
    }

    @Test
    void anInputThatCannotBeReadFailsTheRowsAndTheFileAndTheResultStillCloses() throws Exception {
        Path missing = dir.resolve("missing.parquet");
        RunResult result = tables.begin(List.of(missing), List.of("s"), ForkJoinPool.commonPool());

        assertThatThrownBy(() -> result.rows(memory()))
                .isInstanceOf(SQLException.class)
                .hasMessageContaining("missing.parquet");
        assertThatThrownBy(() -> result.finish(new ResultRow[0], dir.resolve("none.parquet")))
                .isInstanceOf(SQLException.class)
                .hasMessageContaining("missing.parquet");
        result.close();
    }

    @Test
    void aResultClosedWhileItsLargeInputIsStillBeingReadLeavesNoTableBehind() throws Exception {
        Path large = dir.resolve("large.parquet");
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (SELECT range AS x, repeat('y', 40) || range AS expected FROM range(1000000)) TO '" + large
                    + "' (FORMAT parquet)");
        }
        for (int i = 0; i < 5; i++) {
            // closed at once (a run canceled, or failed before its first batch): the reading is stopped, and the
            // table it was making is dropped once it ends, not left to be made after the drop
            tables.begin(List.of(large), List.of("s"), ForkJoinPool.commonPool())
                    .close();
        }
        assertThat(tables.tables()).isEmpty();
    }

    /** Room for any row of these tests. */
    private static RunMemory memory() {
        return new RunMemory(
                new EvaluationMemory(new ai.chalk.compute.server.exec.ByteBudget("test rows", Long.MAX_VALUE)),
                "default");
    }

    private static ResultRow row(Object output) {
        return new ResultRow(output, List.of(0.5), List.of("{}"), null);
    }

    /** A Parquet file of {@code n} rows: {@code x} 0..n-1 and {@code expected} "e<x>", written by DuckDB. */
    private Path input(int n) throws Exception {
        Path file = dir.resolve("input-" + n + ".parquet");
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (SELECT range AS x, 'e' || range AS expected FROM range(" + n + ") ORDER BY x) TO '" + file
                    + "' (FORMAT parquet)");
        }
        return file;
    }

    private static List<List<Object>> read(Path file, String select) throws Exception {
        List<List<Object>> rows = new ArrayList<>();
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(select + "read_parquet('" + file + "')")) {
            int columns = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                List<Object> row = new ArrayList<>();
                for (int i = 1; i <= columns; i++) {
                    row.add(rs.getObject(i));
                }
                rows.add(row);
            }
        }
        return rows;
    }
}
