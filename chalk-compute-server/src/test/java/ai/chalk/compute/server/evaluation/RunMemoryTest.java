package ai.chalk.compute.server.evaluation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.exec.ByteBudget;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * What evaluation runs hold in the heap, on the server-wide budget they share: reservations past it refused with a
 * message, everything given back when a run ends, even while its batches still in flight try to hold more; and the
 * estimate of what a value takes, for the values DuckDB's JDBC driver reads from a tenant's dataset.
 */
class RunMemoryTest {

    @Test
    void runsShareTheBudgetAndARunThatWouldPassItIsToldWhatToDo() throws Exception {
        ByteBudget budget = new ByteBudget("evaluation runs' rows and results", 8L << 20);
        EvaluationMemory memory = new EvaluationMemory(budget);
        RunMemory first = new RunMemory(memory, "acme");
        RunMemory second = new RunMemory(memory, "globex");
        RunMemory third = new RunMemory(memory, "initech");
        first.hold(4L << 20);
        second.hold(3L << 20);

        assertThatThrownBy(() -> third.hold(2L << 20))
                .isInstanceOf(RunMemory.ExceededException.class)
                .hasMessage("the run needs more of the server's memory than evaluation runs may hold (all evaluation"
                        + " runs may hold 8.0 MiB at once, and the runs under way hold 7.0 MiB; this run held 0.0 MiB"
                        + " and needed 2.0 MiB more for its rows and answers): evaluate fewer rows at a time, have the"
                        + " task answer less per row, or give the server a larger heap");
        assertThat(budget.used()).isEqualTo(7L << 20); // the refused hold reserved nothing

        first.close();
        third.hold(2L << 20);
        assertThat(third.held()).isEqualTo(2L << 20);
        second.close();
        third.close();
        assertThat(budget.used()).isZero();
    }

    @Test
    void oneEnvironmentsRunsHoldAtMostHalfSoThatOtherEnvironmentsRunsGoOn() throws Exception {
        // a tenant's runs holding their rows behind a slow task must not fail every other tenant's runs
        ByteBudget budget = new ByteBudget("evaluation runs' rows and results", 8L << 20);
        EvaluationMemory memory = new EvaluationMemory(budget);
        RunMemory hog = new RunMemory(memory, "acme");
        RunMemory hogsSecondRun = new RunMemory(memory, "acme");
        hog.hold(3L << 20);

        assertThatThrownBy(() -> hogsSecondRun.hold(2L << 20))
                .isInstanceOf(RunMemory.ExceededException.class)
                .hasMessageStartingWith("the run needs more of the server's memory than evaluation runs may hold (the"
                        + " runs of one environment may hold 4.0 MiB at once, half of what all evaluation runs"
                        + " share, and this environment's hold 3.0 MiB; this run held 0.0 MiB and needed 2.0 MiB"
                        + " more");
        RunMemory other = new RunMemory(memory, "globex");
        other.hold(4L << 20); // the other half is there for everyone else

        hog.close();
        hogsSecondRun.hold(2L << 20); // its environment's share is free again
        hogsSecondRun.close();
        other.close();
        assertThat(budget.used()).isZero();
    }

    @Test
    void batchesStillInFlightWhenTheRunEndsReserveNothingMore() throws Exception {
        ByteBudget budget = new ByteBudget("evaluation runs' rows and results", Long.MAX_VALUE);
        RunMemory run = new RunMemory(new EvaluationMemory(budget), "acme");
        int threads = 8;
        CountDownLatch started = new CountDownLatch(threads);
        AtomicLong refused = new AtomicLong();
        List<Thread> batches = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                started.countDown();
                while (true) {
                    try {
                        run.hold(100);
                    } catch (RunMemory.ExceededException e) {
                        assertThat(e).hasMessage("the run has ended");
                        refused.incrementAndGet();
                        return;
                    }
                }
            });
            t.start();
            batches.add(t);
        }
        started.await();
        Thread.sleep(20);

        run.close(); // the run failed or was canceled while its batches went on

        for (Thread t : batches) {
            t.join();
        }
        assertThat(refused).hasValue(threads);
        assertThat(budget.used()).isZero();
        assertThatThrownBy(() -> run.hold(1)).hasMessage("the run has ended");
        assertThat(budget.used()).isZero();
    }

    @Test
    void largeValuesCountAsLargeWhateverTheirKind() throws Exception {
        int n = 100_000;
        assertThat(RunMemory.sizeOf("x".repeat(n))).isGreaterThanOrEqualTo(2L * n);
        assertThat(RunMemory.sizeOf(Map.of("answer", List.of("x".repeat(n), 1L))))
                .isGreaterThanOrEqualTo(2L * n);
        assertThat(RunMemory.sizeOf(new byte[n])).isGreaterThanOrEqualTo(n);
        assertThat(RunMemory.sizeOf(7L)).isLessThan(100);
        assertThat(RunMemory.sizeOf(null)).isLessThan(100);
        // the kinds DuckDB's driver reads from a dataset's cells: LIST, STRUCT, BLOB and JSON
        try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT [repeat('x', " + n + ")], {'a': repeat('x', " + n + ")},"
                        + " repeat('x', " + n + ")::BLOB, to_json(repeat('x', " + n + "))")) {
            assertThat(rs.next()).isTrue();
            for (int i = 1; i <= 4; i++) {
                Object cell = rs.getObject(i);
                assertThat(RunMemory.sizeOf(cell)).as(cell.getClass().getName()).isGreaterThanOrEqualTo(n);
            }
        }
    }
}
