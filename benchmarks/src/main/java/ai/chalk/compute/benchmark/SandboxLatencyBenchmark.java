package ai.chalk.compute.benchmark;

import ai.chalk.compute.benchmarks.Benchmark;
import ai.chalk.compute.benchmarks.Figures;
import ai.chalk.compute.benchmarks.HostProcesses;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * What a user of the SDK waits for, end to end through gRPC (in-process and TCP): create + first exec against a bare
 * {@code bwrap --unshare-all ... true} (or {@code unshare ... true} without bubblewrap), a warm exec of {@code true} against a bare {@code nsenter ... true} into the
 * same sandbox, and exec output throughput against reading the same bytes from a plain child process, each baseline
 * measured in the same run.
 */
public final class SandboxLatencyBenchmark implements Benchmark {

    @Override
    public void run(Figures figures, Path dataDir) throws Exception {
        int rounds = figures.rounds(30);
        try (ComputeServer server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start()) {
            System.out.println("isolation: " + server.isolation().level());
            HostProcesses.BareCommand bareSandbox = HostProcesses.bareSandboxTrue();
            for (String transport : List.of("in-process", "tcp")) {
                try (SandboxClient client = transport.equals("tcp")
                        ? SandboxClient.connect("localhost:" + server.port().orElseThrow())
                        : SandboxClient.inProcess(server.inProcessName())) {
                    for (int i = 0; i < 5; i++) { // warm-up
                        bareSandbox.time();
                        createExecTerminate(client);
                    }
                    long[] bare = new long[rounds];
                    long[] ours = new long[rounds];
                    for (int i = 0; i < rounds; i++) { // interleaved, so both see the same machine
                        bare[i] = bareSandbox.time();
                        ours[i] = createExecTerminate(client);
                    }
                    figures.latency(transport + ": create + first exec `true`", ours, bareSandbox.label(), bare);

                    Sandbox warm = client.create();
                    times(20, () -> time(() -> warm.exec("true")));
                    List<String> nsenter = HostProcesses.nsenterTrue(HostProcesses.newestSandboxInit());
                    figures.latency(
                            transport + ": warm exec `true`, back to back",
                            times(rounds * 3, () -> time(() -> warm.exec("true"))),
                            "bare `nsenter ... true`",
                            times(rounds * 3, () -> HostProcesses.time(nsenter)));
                    figures.latency(
                            transport + ": warm exec `true`, 10 ms apart",
                            times(rounds, () -> {
                                sleep(10);
                                return time(() -> warm.exec("true"));
                            }),
                            "bare `nsenter ... true`, 10 ms apart",
                            times(rounds, () -> {
                                sleep(10);
                                return HostProcesses.time(nsenter);
                            }));
                    long bytes = (figures.smoke() ? 64L : 512L) << 20;
                    figures.value(
                            transport + ": exec output throughput",
                            "MB/s",
                            throughput(warm, bytes),
                            "reading a child process's stdout",
                            bareThroughput(bytes));
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

    /** MB/s of {@code head -c BYTES /dev/zero}'s output through the SDK's exec stream. */
    private static double throughput(Sandbox sandbox, long bytes) {
        long t = System.nanoTime();
        long seen = 0;
        try (ExecStream stream = sandbox.execStream("head", "-c", Long.toString(bytes), "/dev/zero")) {
            for (ExecEvent e : stream) {
                if (e instanceof ExecEvent.Stdout out) {
                    seen += out.data().length;
                }
            }
        }
        return seen / 1e6 / ((System.nanoTime() - t) / 1e9);
    }

    /** MB/s of the same command run as a plain child of this JVM, its stdout read in 64 KiB chunks. */
    private static double bareThroughput(long bytes) throws Exception {
        long t = System.nanoTime();
        Process p = new ProcessBuilder("head", "-c", Long.toString(bytes), "/dev/zero").start();
        long seen = 0;
        byte[] buf = new byte[64 << 10];
        try (InputStream in = p.getInputStream()) {
            for (int n; (n = in.read(buf)) >= 0; ) {
                seen += n;
            }
        }
        p.waitFor();
        return seen / 1e6 / ((System.nanoTime() - t) / 1e9);
    }

    private static long time(Runnable r) {
        long t = System.nanoTime();
        r.run();
        return System.nanoTime() - t;
    }

    private static long[] times(int n, LongSupplier one) {
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = one.getAsLong();
        }
        return out;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
