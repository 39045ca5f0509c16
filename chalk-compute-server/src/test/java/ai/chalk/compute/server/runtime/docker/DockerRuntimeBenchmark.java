package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.LatencyReport;
import ai.chalk.compute.server.runtime.LatencyRounds;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import java.nio.file.Path;
import java.util.List;
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
            LatencyRounds r =
                    LatencyRounds.measure(runtime, RuntimeTesting::spec, ROUNDS, 5, () -> dockerRunTrue(image));
            long[] cliExecTimes = new long[ROUNDS];
            for (int i = 0; i < cliExecTimes.length; i++) {
                long t = System.nanoTime();
                DockerTesting.Result res =
                        DockerTesting.docker("exec", ((DockerSandbox) r.warmSandbox()).containerId(), "true");
                assertThat(res.code()).as(res.output()).isZero();
                cliExecTimes[i] = System.nanoTime() - t;
            }

            System.out.printf(
                    "%ndocker runtime (engine at %s, image %s) latency over %d rounds, JVM pid %d%n",
                    runtime.dockerHost(), image, ROUNDS, ProcessHandle.current().pid());
            LatencyReport report = new LatencyReport(r.bare(), 40, 7);
            report.line("`docker run --rm image true` (baseline)", r.bare());
            report.line("create sandbox", r.create());
            report.line("create + first exec `true`", r.createAndExec());
            report.line("warm exec `true`, back to back", r.warm());
            report.line("warm exec `true`, 10 ms apart", r.spaced());
            report.line("`docker exec <c> true` (CLI, warm)", cliExecTimes);
            report.line("terminate idle (grace 5 s)", r.terminate());
        }
    }

    private static void dockerRunTrue(String image) {
        DockerTesting.Result r =
                DockerTesting.run(List.of("docker", "run", "--rm", "--network", "none", image, "true"));
        assertThat(r.code()).as(r.output()).isZero();
    }
}
