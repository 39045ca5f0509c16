package ai.chalk.compute.function.remote;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm remote calls through the server on loopback TCP (client → server → worker JVM on a Unix socket → back):
 * latency of one call after another, and throughput with concurrent callers, next to a bare gRPC health check of the
 * same server over the same channel measured in the same run. Prints figures and ratios; never asserts timings.
 *
 * <p>Everything measured is warm: sequential and concurrent warm-up rounds run first, so the JIT compilers of this
 * JVM and of the workers are done and the function's pool has scaled to its {@code maxReplicas} before any window is
 * measured (a replica starting inside a window would measure a JVM start, not calls).
 * Run: {@code ./mvnw -B -pl chalk-compute-core -am test -Dtest=FunctionCallBenchmark
 * -Dsurefire.failIfNoSpecifiedTests=false}; the figures are in {@code target/surefire-reports/*-output.txt}.
 */
@Tag("benchmark")
class FunctionCallBenchmark {

    private static final int SEQUENTIAL = 5000;
    private static final long WINDOW_SECONDS = 3;

    @Test
    void warmCalls(@TempDir Path dataDir) throws Exception {
        try (DeployedTally tally = new DeployedTally(dataDir)) {
            tally.deploy("sum");
            RemoteFunction sum = tally.remote("sum");
            var health = HealthGrpc.newBlockingStub(tally.channel);
            HealthCheckRequest check = HealthCheckRequest.getDefaultInstance();
            Runnable healthCheck = () -> health.check(check);
            Runnable call = () -> sum.call(1L, 2L);

            // warm-up: one caller, then many (which also starts the pool's further replicas), then one again; the
            // workers compile with C2, which takes this long to settle (shorter, and p99 and worker CPU show it)
            measure(SEQUENTIAL, () -> time(healthCheck));
            measure(SEQUENTIAL, () -> time(call));
            rate(16, healthCheck, WINDOW_SECONDS);
            rate(16, call, 2 * WINDOW_SECONDS);
            measure(SEQUENTIAL, () -> time(call));

            System.out.printf(
                    "machine: %d cores, load average %.2f; function sum on %d replicas%n",
                    Runtime.getRuntime().availableProcessors(),
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
                    replicas(tally));
            long[] bare = measure(SEQUENTIAL, () -> time(healthCheck));
            long[] calls = measure(SEQUENTIAL, () -> time(call));
            report("bare health check (baseline)", bare, bare);
            report("warm call of sum(1, 2)", calls, bare);

            for (int callers : List.of(1, 4, 16)) {
                Rate healthRate = rate(callers, healthCheck, WINDOW_SECONDS);
                Rate callRate = rate(callers, call, WINDOW_SECONDS);
                System.out.printf(
                        "throughput, %2d concurrent callers: %,8.0f calls/s (health checks %,8.0f/s, ratio %.2f);"
                                + " CPU per call %4.0f µs, %3.0f of them in workers (health check %3.0f µs)%n",
                        callers,
                        callRate.perSecond(),
                        healthRate.perSecond(),
                        callRate.perSecond() / healthRate.perSecond(),
                        callRate.cpuMicrosPerCall(),
                        callRate.workerCpuMicrosPerCall(),
                        healthRate.cpuMicrosPerCall());
            }
        }
    }

    private static int replicas(DeployedTally tally) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(tally.channel)
                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                        .setFunctionName("sum")
                        .setIncludeScalingGroup(true)
                        .build())
                .getScalingGroup()
                .getReadyReplicas();
    }

    private static long time(Runnable r) {
        long t = System.nanoTime();
        r.run();
        return System.nanoTime() - t;
    }

    private static long[] measure(int rounds, LongSupplier one) {
        long[] ns = new long[rounds];
        for (int i = 0; i < rounds; i++) {
            ns[i] = one.getAsLong();
        }
        Arrays.sort(ns);
        return ns;
    }

    private static void report(String what, long[] sorted, long[] baseline) {
        double p50 = sorted[sorted.length / 2] / 1e6;
        double p99 = sorted[(int) (sorted.length * 0.99)] / 1e6;
        double base = baseline[baseline.length / 2] / 1e6;
        System.out.printf("%-32s p50 %7.3f ms  p99 %7.3f ms  (%.2fx baseline p50)%n", what, p50, p99, p50 / base);
    }

    /**
     * Calls per second, and CPU time per call of this JVM (client and server) and its descendants (the workers), on
     * a machine whose other load this cannot see.
     */
    private record Rate(double perSecond, double cpuMicrosPerCall, double workerCpuMicrosPerCall) {}

    /** Calls per second over {@code seconds} with {@code callers} threads calling back to back. */
    private static Rate rate(int callers, Runnable call, long seconds) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        try {
            long[] cpuBefore = cpuNanos();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            List<Future<Long>> counts = new ArrayList<>();
            for (int i = 0; i < callers; i++) {
                counts.add(pool.submit(() -> {
                    long n = 0;
                    while (System.nanoTime() < end) {
                        call.run();
                        n++;
                    }
                    return n;
                }));
            }
            long total = 0;
            for (Future<Long> f : counts) {
                total += f.get();
            }
            long[] cpuAfter = cpuNanos();
            double all = (cpuAfter[0] - cpuBefore[0]) + (cpuAfter[1] - cpuBefore[1]);
            return new Rate(total / (double) seconds, all / 1e3 / total, (cpuAfter[1] - cpuBefore[1]) / 1e3 / total);
        } finally {
            pool.shutdownNow();
        }
    }

    /** CPU time (user and system) of this process and of its descendants, from {@code /proc} (0 where there is none). */
    private static long[] cpuNanos() {
        long self = cpuNanos(ProcessHandle.current().pid());
        long children = ProcessHandle.current()
                .descendants()
                .mapToLong(p -> cpuNanos(p.pid()))
                .sum();
        return new long[] {self, children};
    }

    private static long cpuNanos(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L; // fields 14 and 15, in 1/100 s
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
