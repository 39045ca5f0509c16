package ai.chalk.compute.benchmark;

import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a user of the SDK waits for, end to end through gRPC (in-process and TCP): create + first
 * exec, a warm exec of {@code true}, and exec output throughput, next to a bare
 * {@code bwrap --unshare-all ... true} measured in the same run. Prints figures and ratios; never
 * asserts timings. Run: {@code ./mvnw -B -pl chalk-compute-core test -Dtest=SandboxLatencyBenchmark}.
 */
@Tag("benchmark")
class SandboxLatencyBenchmark {

    private static final int ROUNDS = 30;

    @Test
    void latencyAndThroughput(@TempDir Path dataDir) throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start()) {
            System.out.println("isolation: " + server.isolation().level());
            long[] bare = time(
                    ROUNDS,
                    i -> run(List.of(
                            "bwrap",
                            "--ro-bind",
                            "/usr",
                            "/usr",
                            "--symlink",
                            "usr/bin",
                            "/bin",
                            "--symlink",
                            "usr/lib",
                            "/lib",
                            "--symlink",
                            "usr/lib64",
                            "/lib64",
                            "--proc",
                            "/proc",
                            "--dev",
                            "/dev",
                            "--unshare-all",
                            "--die-with-parent",
                            "--",
                            "true")));
            report("bare bwrap ... true (baseline)", bare, bare);
            for (String transport : List.of("in-process", "tcp")) {
                try (SandboxClient client = transport.equals("tcp")
                        ? SandboxClient.connect("localhost:" + server.port().orElseThrow())
                        : SandboxClient.inProcess(server.inProcessName())) {
                    time(5, i -> createExecTerminate(client)); // warm-up
                    report(transport + ": create + first exec", time(ROUNDS, i -> createExecTerminate(client)), bare);
                    Sandbox warm = client.create();
                    time(20, i -> warm.exec("true"));
                    report(
                            transport + ": warm exec of true (back to back)",
                            time(ROUNDS * 3, i -> warm.exec("true")),
                            bare);
                    long[] spaced = time(ROUNDS, i -> {
                        sleep(10);
                        long t = System.nanoTime();
                        warm.exec("true");
                        return System.nanoTime() - t;
                    });
                    report(transport + ": warm exec of true (10 ms apart)", spaced, bare);
                    throughput(transport, warm);
                    warm.terminate();
                }
            }
        }
    }

    private static long createExecTerminate(SandboxClient client) {
        long t = System.nanoTime();
        Sandbox s = client.create();
        s.exec("true");
        long elapsed = System.nanoTime() - t;
        s.terminate();
        return elapsed;
    }

    private static void throughput(String transport, Sandbox sandbox) {
        long bytes = 512L << 20;
        long t = System.nanoTime();
        long seen = 0;
        try (ExecStream stream = sandbox.execStream("head", "-c", Long.toString(bytes), "/dev/zero")) {
            for (ExecEvent e : stream) {
                if (e instanceof ExecEvent.Stdout out) {
                    seen += out.data().length;
                }
            }
        }
        double seconds = (System.nanoTime() - t) / 1e9;
        System.out.printf(
                "%-48s %8.0f MB/s (%d MiB in %.2f s)%n",
                transport + ": exec output throughput", seen / 1e6 / seconds, seen >> 20, seconds);
    }

    private static long run(List<String> command) {
        try {
            long t = System.nanoTime();
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            if (p.waitFor() != 0) {
                throw new IllegalStateException(command + " failed");
            }
            return System.nanoTime() - t;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Runs {@code body} n times; a body returning a positive long reports its own duration. */
    private static long[] time(int n, Function<Integer, Object> body) {
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            Object r = body.apply(i);
            out[i] = r instanceof Long own && own > 0 ? own : System.nanoTime() - t;
        }
        return out;
    }

    private static void report(String what, long[] nanos, long[] baseline) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        long[] b = baseline.clone();
        Arrays.sort(b);
        double p50 = s[s.length / 2] / 1e6;
        double p95 = s[(int) (s.length * 0.95)] / 1e6;
        double base = b[b.length / 2] / 1e6;
        System.out.printf(
                "%-48s p50 %6.2f ms  p95 %6.2f ms  (%.2fx bare bwrap p50 %.2f ms)%n", what, p50, p95, p50 / base, base);
    }
}
