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
                    // steady state, as in a service that has been running: a new channel's transport code (Netty's,
                    // for TCP) is interpreted at first, and 20 execs left the TCP figures measuring the JIT's warm-up
                    times(figures.smoke() ? 20 : WARM_UP_EXECS, () -> time(() -> warm.exec("true")));
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
                    // the first large output of a channel, then steady state: the transport's code takes a few
                    // transfers of this size to be compiled (over TCP the rate grows for about 2 GB)
                    figures.value(
                            transport + ": exec output throughput, first transfer",
                            "MB/s",
                            throughput(warm, bytes),
                            "reading a child process's stdout",
                            bareThroughput(bytes));
                    for (int i = 0; i < (figures.smoke() ? 0 : WARM_UP_TRANSFERS); i++) {
                        throughput(warm, bytes);
                    }
                    double[] ourRates = new double[figures.rounds(THROUGHPUT_ROUNDS)];
                    double[] bareRates = new double[ourRates.length];
                    for (int i = 0; i < ourRates.length; i++) { // interleaved, so both see the same machine
                        ourRates[i] = throughput(warm, bytes);
                        bareRates[i] = bareThroughput(bytes);
                    }
                    figures.value(
                            transport + ": exec output throughput",
                            "MB/s",
                            median(ourRates),
                            "reading a child process's stdout",
                            median(bareRates));
                    warm.terminate();
                }
            }
        }
    }

    /** Execs before the warm figures: about two seconds, enough for the JIT to compile the exec path. */
    private static final int WARM_UP_EXECS = 500;

    /** Transfers before the steady output throughput is timed, after the first one. */
    private static final int WARM_UP_TRANSFERS = 3;

    /** Transfers timed for the steady output throughput (the median is the figure). */
    private static final int THROUGHPUT_ROUNDS = 5;

    private static double median(double[] values) {
        double[] sorted = values.clone();
        java.util.Arrays.sort(sorted);
        return sorted[sorted.length / 2];
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
