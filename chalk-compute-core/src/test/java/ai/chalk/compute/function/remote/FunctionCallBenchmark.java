package ai.chalk.compute.function.remote;

import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
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
 * Run: {@code ./mvnw -B -pl chalk-compute-core test -Dtest=FunctionCallBenchmark}.
 */
@Tag("benchmark")
class FunctionCallBenchmark {

    @Test
    void warmCalls(@TempDir Path dataDir) throws Exception {
        try (DeployedTally tally = new DeployedTally(dataDir)) {
            tally.deploy("sum");
            RemoteFunction sum = tally.remote("sum");
            var health = HealthGrpc.newBlockingStub(tally.channel);
            HealthCheckRequest check = HealthCheckRequest.getDefaultInstance();

            measure(2000, () -> time(() -> health.check(check)));
            measure(2000, () -> time(() -> sum.call(1L, 2L)));
            long[] bare = measure(3000, () -> time(() -> health.check(check)));
            long[] calls = measure(3000, () -> time(() -> sum.call(1L, 2L)));
            report("bare health check (baseline)", bare, bare);
            report("warm call of sum(1, 2)", calls, bare);

            for (int callers : List.of(4, 16)) {
                double healthRate = rate(callers, () -> health.check(check));
                double callRate = rate(callers, () -> sum.call(1L, 2L));
                System.out.printf("throughput, %2d concurrent callers: %,8.0f calls/s (health checks %,8.0f/s, ratio %.2f)%n",
                        callers, callRate, healthRate, callRate / healthRate);
            }
        }
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

    /** Calls per second over three seconds with {@code callers} threads calling back to back. */
    private static double rate(int callers, Runnable call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        try {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
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
            return total / 3.0;
        } finally {
            pool.shutdownNow();
        }
    }
}
