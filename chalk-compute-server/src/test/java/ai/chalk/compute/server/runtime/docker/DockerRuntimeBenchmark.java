package ai.chalk.compute.server.runtime.docker;

import static ai.chalk.compute.server.runtime.RuntimeTesting.command;
import static ai.chalk.compute.server.runtime.RuntimeTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Latency of the docker runtime next to {@code docker run --rm <image> true} measured in the same run, so the
 * figures can be compared across machines. Prints, never asserts timings. Run with
 * {@code ./mvnw -B -o -pl chalk-compute-server test -Dtest=DockerRuntimeBenchmark}.
 */
@Tag("benchmark")
class DockerRuntimeBenchmark {

    private static final int ROUNDS = 20;

    @Test
    void createAndExecLatency(@TempDir Path state) throws Exception {
        String image = DockerTesting.image();
        try (DockerRuntime runtime = DockerTesting.runtime(state)) {
            for (int i = 0; i < 5; i++) { // warm up the JIT, the engine and the page cache
                dockerRunTrue(image);
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
                dockerRunTrue(image);
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
            long[] cliExecTimes = new long[ROUNDS];
            for (int i = 0; i < cliExecTimes.length; i++) {
                long t = System.nanoTime();
                DockerTesting.Result r = DockerTesting.docker("exec", ((DockerSandbox) warm).containerId(), "true");
                assertThat(r.code()).as(r.output()).isZero();
                cliExecTimes[i] = System.nanoTime() - t;
            }

            double bare50 = pct(bareTimes, 50);
            System.out.printf("%ndocker runtime (engine at %s, image %s) latency over %d rounds, JVM pid %d%n",
                    runtime.dockerHost(), image, ROUNDS, ProcessHandle.current().pid());
            report("`docker run --rm image true` (baseline)", bareTimes, bare50);
            report("create sandbox", createTimes, bare50);
            report("create + first exec `true`", createAndExecTimes, bare50);
            report("warm exec `true`, back to back", warmTimes, bare50);
            report("warm exec `true`, 10 ms apart", spacedTimes, bare50);
            report("`docker exec <c> true` (CLI, warm)", cliExecTimes, bare50);
            report("terminate (grace 0)", terminateTimes, bare50);
        }
    }

    private static void dockerRunTrue(String image) {
        DockerTesting.Result r = DockerTesting.run(List.of("docker", "run", "--rm", "--network", "none", image, "true"));
        assertThat(r.code()).as(r.output()).isZero();
    }

    private static void runTrue(RuntimeSandbox sb) throws Exception {
        RuntimeProcess p = sb.exec(command("true"));
        p.stdin().close();
        readAll(p.stdout());
        readAll(p.stderr());
        assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
    }

    private static void readAll(InputStream in) throws IOException {
        try (in) {
            in.transferTo(OutputStream.nullOutputStream());
        }
    }

    private static void report(String what, long[] nanos, double baseline) {
        double p50 = pct(nanos, 50);
        double p95 = pct(nanos, 95);
        System.out.printf("  %-40s p50 %7.2f ms   p95 %7.2f ms   p50 = %4.2f x baseline%n", what, p50, p95,
                p50 / baseline);
    }

    private static double pct(long[] nanos, int percentile) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        int index = Math.min(sorted.length - 1, (int) Math.ceil(percentile / 100.0 * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e6;
    }
}
