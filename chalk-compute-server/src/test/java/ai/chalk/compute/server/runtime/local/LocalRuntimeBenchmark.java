package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Latency of the local runtime next to a bare {@code bwrap ... true} measured in the same run, so the figures can
 * be compared across machines. Prints, never asserts timings.
 */
@Tag("benchmark")
class LocalRuntimeBenchmark {

    private static final int ROUNDS = 40;

    @Test
    void createAndExecLatency(@TempDir Path state) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO)) {
            // the raw tool: the same namespaces and mounts as a sandbox's init, running `true`
            Path layer = Files.createDirectories(state.resolve("bench-layer"));
            SandboxFiles.createLayer(layer, runtime.systemView());
            List<String> bare = new ArrayList<>();
            bare.add(runtime.tools().require("bwrap").toString());
            List<String> args = SandboxCommands.bubblewrapArgs(layer, runtime.systemView(), "bench", false, "/");
            bare.addAll(args.subList(0, args.size() - 2)); // without --json-status-fd
            bare.addAll(List.of("--", "true"));

            for (int i = 0; i < 10; i++) { // warm up the JIT and the page cache
                runBare(bare);
                RuntimeSandbox sb = runtime.start(spec());
                runTrue(sb);
                sb.terminate(Duration.ZERO);
            }

            long[] bareTimes = new long[ROUNDS];
            long[] createTimes = new long[ROUNDS];
            long[] createAndExecTimes = new long[ROUNDS];
            long[] terminateTimes = new long[ROUNDS];
            for (int i = 0; i < ROUNDS; i++) {
                long t0 = System.nanoTime();
                runBare(bare);
                bareTimes[i] = System.nanoTime() - t0;

                long t1 = System.nanoTime();
                RuntimeSandbox sb = runtime.start(spec());
                long t2 = System.nanoTime();
                runTrue(sb);
                long t3 = System.nanoTime();
                sb.terminate(Duration.ZERO);
                terminateTimes[i] = System.nanoTime() - t3;
                createTimes[i] = t2 - t1;
                createAndExecTimes[i] = t3 - t1;
            }

            RuntimeSandbox warm = runtime.start(spec());
            for (int i = 0; i < 20; i++) {
                runTrue(warm);
            }
            long[] warmTimes = new long[ROUNDS * 3];
            for (int i = 0; i < warmTimes.length; i++) {
                long t = System.nanoTime();
                runTrue(warm);
                warmTimes[i] = System.nanoTime() - t;
            }
            long[] spacedTimes = new long[ROUNDS * 2];
            for (int i = 0; i < spacedTimes.length; i++) {
                Thread.sleep(10); // as a client that looks at each result before the next exec
                long t = System.nanoTime();
                runTrue(warm);
                spacedTimes[i] = System.nanoTime() - t;
            }
            long[] pidTimes = new long[ROUNDS];
            for (int i = 0; i < pidTimes.length; i++) {
                Thread.sleep(10);
                long t = System.nanoTime();
                RuntimeProcess p = warm.exec(command("true"));
                p.pid();
                pidTimes[i] = System.nanoTime() - t;
                p.stdin().close();
                drain(p);
            }

            double bare50 = pct(bareTimes, 50);
            System.out.printf("%nlocal runtime (%s) latency over %d rounds, JVM pid %d%n",
                    runtime.isolation().level(), ROUNDS, ProcessHandle.current().pid());
            report("bare `bwrap ... true` (baseline)", bareTimes, bare50);
            report("create sandbox", createTimes, bare50);
            report("create + first exec `true`", createAndExecTimes, bare50);
            report("warm exec `true`, back to back", warmTimes, bare50);
            report("warm exec `true`, 10 ms apart", spacedTimes, bare50);
            report("warm exec until pid() known", pidTimes, bare50);
            report("terminate (grace 0)", terminateTimes, bare50);
        }
    }

    private static void runBare(List<String> command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().put("PATH", LocalRuntime.DEFAULT_PATH);
        Process p = pb.start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor()).as(new String(out)).isZero();
    }

    private static void runTrue(RuntimeSandbox sb) throws Exception {
        RuntimeProcess p = sb.exec(command("true"));
        p.stdin().close();
        assertThat(drain(p)).isEqualTo(ExitStatus.exited(0));
    }

    private static ExitStatus drain(RuntimeProcess p) throws Exception {
        // read stderr on this thread after stdout: `true` prints nothing, so neither read blocks for long
        readAll(p.stdout());
        readAll(p.stderr());
        return p.onExit().get(10, TimeUnit.SECONDS);
    }

    private static void readAll(InputStream in) throws IOException {
        try (in) {
            in.transferTo(java.io.OutputStream.nullOutputStream());
        }
    }

    private static void report(String what, long[] nanos, double baseline) {
        double p50 = pct(nanos, 50);
        double p95 = pct(nanos, 95);
        System.out.printf("  %-36s p50 %6.2f ms   p95 %6.2f ms   p50 = %4.2f x baseline%n", what, p50, p95,
                p50 / baseline);
    }

    private static double pct(long[] nanos, int percentile) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        int index = Math.min(sorted.length - 1, (int) Math.ceil(percentile / 100.0 * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e6;
    }
}
