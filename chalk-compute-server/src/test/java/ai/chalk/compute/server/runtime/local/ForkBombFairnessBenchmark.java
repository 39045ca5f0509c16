package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;

import ai.chalk.compute.server.runtime.LatencyReport;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How long another tenant's {@code echo} takes while one sandbox runs a fork bomb, against the same exec with the
 * machine quiet, in one run (a ratio, not a timed test). Not part of {@code mvn verify}; run it with
 * {@code ./mvnw -B -pl chalk-compute-server test -Dtest=ForkBombFairnessBenchmark -Dsurefire.failIfNoSpecifiedTests=false}.
 * The aim (issue "Security first"): p99 under 250 ms with the bomb running.
 */
class ForkBombFairnessBenchmark {

    private static final int ROUNDS = 100;

    @Test
    void anotherTenantsExecUnderAForkBomb(@TempDir Path state) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO)) {
            RuntimeSandbox victim = runtime.start(LocalTesting.spec());
            long[] quiet = rounds(victim);
            RuntimeSandbox bomb = runtime.start(LocalTesting.spec());
            RuntimeProcess p = bomb.exec(LocalTesting.sh("f() { f | f & }; f; sleep 600"));
            p.stdin().close();
            Thread.sleep(2_000); // let it reach the sandbox's process limit
            long[] loaded = rounds(victim);
            long t = System.nanoTime();
            bomb.terminate(Duration.ZERO);
            long terminate = System.nanoTime() - t;
            LatencyReport report = new LatencyReport(quiet, 34, 8);
            System.out.println("Another tenant's exec of echo, " + ROUNDS + " rounds, isolation "
                    + runtime.isolation().level() + " (baseline: the same with no bomb):");
            report.line("quiet", quiet);
            report.line("next to a fork bomb", loaded);
            System.out.printf(
                    "  p99 quiet %.2f ms, next to the bomb %.2f ms; terminate of the bomb %.0f ms%n",
                    LatencyReport.pct(quiet, 99), LatencyReport.pct(loaded, 99), terminate / 1e6);
            victim.terminate(Duration.ZERO);
        }
    }

    private static long[] rounds(RuntimeSandbox sandbox) throws Exception {
        long[] nanos = new long[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
            Thread.sleep(20);
            long t = System.nanoTime();
            LocalTesting.run(sandbox, command("echo", "hi")).ok();
            nanos[i] = System.nanoTime() - t;
        }
        return nanos;
    }
}
