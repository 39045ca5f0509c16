package ai.chalk.compute.server.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The rounds both runtime benchmarks time: a baseline next to create, first exec and terminate, then execs of
 * {@code true} in one warm sandbox, back to back and 10 ms apart.
 *
 * @param bare           the baseline, once a round
 * @param create         starting a sandbox
 * @param createAndExec  starting a sandbox and running {@code true} in it
 * @param terminate      terminating it, idle after its exec, with the grace period a client's terminate gets by
 *                       default ({@link #DEFAULT_GRACE}): the SIGTERM pass included, as every such terminate has it
 * @param warm           execs in the warm sandbox, back to back
 * @param spaced         execs in the warm sandbox, 10 ms apart
 * @param warmSandbox    the warm sandbox, still running, for more measurements
 */
public record LatencyRounds(
        long[] bare,
        long[] create,
        long[] createAndExec,
        long[] terminate,
        long[] warm,
        long[] spaced,
        RuntimeSandbox warmSandbox) {

    /** The server's grace period for a terminate that names none. */
    public static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);

    /** What the baseline runs, once a round. */
    public interface Baseline {
        void run() throws Exception;
    }

    /** Warms up {@code warmups} times, then measures {@code rounds} rounds of sandboxes from {@code specs}. */
    public static LatencyRounds measure(
            SandboxRuntime runtime, Supplier<SandboxSpec> specs, int rounds, int warmups, Baseline baseline)
            throws Exception {
        for (int i = 0; i < warmups; i++) { // warm up the JIT, the engine and the page cache
            baseline.run();
            RuntimeSandbox sb = runtime.start(specs.get());
            runTrue(sb);
            sb.terminate(DEFAULT_GRACE);
        }

        long[] bareTimes = new long[rounds];
        long[] createTimes = new long[rounds];
        long[] createAndExecTimes = new long[rounds];
        long[] terminateTimes = new long[rounds];
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            baseline.run();
            bareTimes[i] = System.nanoTime() - t0;

            long t1 = System.nanoTime();
            RuntimeSandbox sb = runtime.start(specs.get());
            long t2 = System.nanoTime();
            runTrue(sb);
            long t3 = System.nanoTime();
            sb.terminate(DEFAULT_GRACE);
            terminateTimes[i] = System.nanoTime() - t3;
            createTimes[i] = t2 - t1;
            createAndExecTimes[i] = t3 - t1;
        }

        RuntimeSandbox warm = runtime.start(specs.get());
        for (int i = 0; i < 20; i++) {
            runTrue(warm);
        }
        long[] warmTimes = new long[rounds * 3];
        for (int i = 0; i < warmTimes.length; i++) {
            long t = System.nanoTime();
            runTrue(warm);
            warmTimes[i] = System.nanoTime() - t;
        }
        long[] spacedTimes = new long[rounds * 2];
        for (int i = 0; i < spacedTimes.length; i++) {
            Thread.sleep(10); // as a client that looks at each result before the next exec
            long t = System.nanoTime();
            runTrue(warm);
            spacedTimes[i] = System.nanoTime() - t;
        }
        return new LatencyRounds(
                bareTimes, createTimes, createAndExecTimes, terminateTimes, warmTimes, spacedTimes, warm);
    }

    /** Runs {@code true} in {@code sb}, reading its output to the end, and expects exit code 0. */
    public static void runTrue(RuntimeSandbox sb) throws Exception {
        RuntimeProcess p = sb.exec(RuntimeTesting.command("true"));
        p.stdin().close();
        assertThat(drain(p)).isEqualTo(ExitStatus.exited(0));
    }

    /** Reads a process's stdout, then its stderr, to the end, and waits up to 10 s for its status. */
    public static ExitStatus drain(RuntimeProcess p) throws Exception {
        // read stderr on this thread after stdout: `true` prints nothing, so neither read blocks for long
        readAll(p.stdout());
        readAll(p.stderr());
        return p.onExit().get(10, TimeUnit.SECONDS);
    }

    private static void readAll(InputStream in) throws IOException {
        try (in) {
            in.transferTo(OutputStream.nullOutputStream());
        }
    }
}
