package ai.chalk.compute.function.remote;

import ai.chalk.compute.benchmarks.Benchmark;
import ai.chalk.compute.benchmarks.Figures;
import ai.chalk.compute.benchmarks.HostProcesses;
import ai.chalk.compute.benchmarks.IdleJvm;
import ai.chalk.compute.benchmarks.Samples;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.server.worker.WorkerLaunch;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
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

/**
 * Functions through the server on loopback TCP (client → server → worker JVM on a Unix socket → back): the cold
 * start of a replica against a {@code java -version} in a sandbox; warm calls one after another and from 16 callers
 * against a bare gRPC unary call (a health check of the same server over the same channel); and a worker's resident
 * memory against an idle JVM started with the worker's flags. Each baseline is measured in the same run. The argument
 * {@code skip=coldstart} leaves the cold start out.
 *
 * <p>Warm calls are measured warm: sequential and concurrent warm-up rounds run first, so the JIT compilers of this
 * JVM and of the workers are done and the function's pool has scaled to its {@code maxReplicas} before any window is
 * measured (a replica starting inside a window would measure a JVM start, not calls).
 *
 * <p>Where a cold replica's time goes (the worker alone, class loading logged with {@code -Xlog:class+load}): some 4,000
 * classes, of which the JDK's default archive shares about 1,200; a third of the start reads the logging configuration
 * (logback's Joran, its XML parser; a test class path has several {@code logback-test.xml}), a third starts Netty and
 * gRPC, a third loads the functions (Arrow's {@code Schema} initialises a Jackson {@code ObjectMapper}, 600 classes).
 * The worker now reads its logging configuration on a thread of its own while Arrow's classes initialise. An
 * application class-data archive ({@code -XX:ArchiveClassesAtExit}, then {@code -XX:SharedArchiveFile}) cut the CPU a
 * worker spends until it serves to about 0.4x and its resident memory by some 15 MB, but JDK 17 refuses to make one
 * for a class path with non-empty directories, which a code snapshot's {@code target/classes} are: not used yet (README,
 * Benchmarks).
 *
 * <p>Issue 19 (Dec 2026, load average 7 to 10 on 2 cores): the server logs each replica's start in phases (sandbox
 * 100-650 ms, exec under 25 ms, JVM to socket, to SERVING) and the worker its own (exec to {@code main} 300 ms under
 * load, logging and Arrow, socket and functions). Starting a replica at deploy was built and left out: this figure's
 * call follows the deploy at once, so it gains nothing, and every deploy would start a JVM whether or not a call comes
 * (a Spring application deploys its functions at each start). Tried on the worker alone (this class path,
 * outside a sandbox, three alternating runs each, CPU until SERVING): an application archive (class path as jars,
 * static dump from {@code -XX:DumpLoadedClassList}) 2.2 s to 0.85 s of CPU, 2.5 s to 1.0 s to SERVING, but its dump
 * took 5.4 s of CPU, so made at deploy it costs the first replica more than it saves; an archive of the JDK's classes
 * only (the 627 the default archive lacks) no measurable gain; {@code -XX:TieredStopAtLevel=1} 2.3 s to 1.3 s of CPU
 * (rejected before for warm calls); no bytecode verification of the code (a diagnostic flag) 10 to 30 % less CPU.
 */
public final class FunctionCallBenchmark implements Benchmark {

    /** Two rounds of the JVM's return of freed compiler memory and of its C-heap trim, 5 s each, and a margin. */
    private static final long SETTLE_MILLIS = 12_000;

    /** Tally's {@code sum} runs at most this many replicas ({@code @ChalkFunction(maxReplicas = 2)}). */
    private static final int MAX_REPLICAS = 2;

    @Override
    public void run(Figures figures, Path dataDir) throws Exception {
        int sequential = figures.smoke() ? 300 : 5000;
        long window = figures.smoke() ? 1 : 3;
        try (DeployedTally tally = new DeployedTally(dataDir)) {
            if (figures.skips("coldstart")) { // skip=coldstart: warm calls only, while iterating on them
                tally.deploy("sum");
            } else {
                coldStart(figures, tally);
            }
            RemoteFunction sum = tally.remote("sum");
            var health = HealthGrpc.newBlockingStub(tally.channel);
            HealthCheckRequest check = HealthCheckRequest.getDefaultInstance();
            Runnable healthCheck = () -> health.check(check);
            Runnable call = () -> sum.call(1L, 2L);

            // warm-up: one caller, then many (which also starts the pool's further replicas), then one again; the
            // workers compile with C2, which takes this long to settle (shorter, and p99 and worker CPU show it)
            measure(sequential, () -> time(healthCheck));
            measure(sequential, () -> time(call));
            rate(16, healthCheck, window);
            rate(16, call, 2 * window);
            measure(sequential, () -> time(call));
            scaledOut(tally, call);

            System.out.printf("function sum on %d replicas%n", replicas(tally));
            long[] bare = new long[sequential];
            long[] calls = new long[sequential];
            for (int i = 0; i < sequential; i++) { // interleaved, so both see the same machine
                bare[i] = time(healthCheck);
                calls[i] = time(call);
            }
            figures.latency("function: warm call sum(1, 2)", calls, "bare gRPC unary call (health check)", bare);

            for (int callers : List.of(1, 16)) {
                if (callers > 1) {
                    scaledOut(tally, call); // one caller leaves all but one replica idle, long enough to stop them
                }
                Rate healthRate = rate(callers, healthCheck, window);
                Rate callRate = rate(callers, call, window);
                figures.value(
                        "function: throughput, " + callers + " callers",
                        "calls/s",
                        callRate.perSecond(),
                        "bare gRPC unary calls, " + callers + " callers",
                        healthRate.perSecond());
                System.out.printf(
                        "  CPU per call %4.0f µs, %3.0f of them in workers (health check %3.0f µs)%n",
                        callRate.cpuMicrosPerCall(), callRate.workerCpuMicrosPerCall(), healthRate.cpuMicrosPerCall());
            }
            footprint(figures);
        }
    }

    /** Deploy and first call of a function on a fresh replica, next to a {@code java -version} in a sandbox. */
    private static void coldStart(Figures figures, DeployedTally tally) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        long[] javaVersion = new long[figures.rounds(10)];
        try (Sandbox sandbox = tally.client.create()) {
            sandbox.exec(java, "-version"); // the page cache, as a replica's JVM finds it
            for (int i = 0; i < javaVersion.length; i++) {
                long t = System.nanoTime();
                ExecResult r = sandbox.exec(java, "-version");
                javaVersion[i] = System.nanoTime() - t;
                if (r.exitCode() != 0) {
                    throw new IllegalStateException("java -version in a sandbox: " + r.stderrText());
                }
            }
        }
        long t0 = System.nanoTime();
        tally.deploy("sum");
        long t1 = System.nanoTime();
        tally.remote("sum").call(1L, 2L);
        long t2 = System.nanoTime();
        double baseline = Samples.medianMillis(javaVersion);
        String name = "`java -version` in a sandbox";
        figures.value("function: deploy + first call (cold replica)", "ms", (t2 - t0) / 1e6, name, baseline);
        figures.value("function: first call after deploy", "ms", (t2 - t1) / 1e6, name, baseline);
    }

    private static double largestRss(List<ProcessHandle> workers) {
        double largest = 0;
        for (ProcessHandle w : workers) {
            largest = Math.max(largest, HostProcesses.rssMegabytes(w.pid()));
        }
        return largest;
    }

    /**
     * The largest resident set among the workers, next to an idle JVM started with a worker's JVM flags: once just
     * after the calls, and once settled. Right after a burst of calls a worker still holds what its JIT compilers
     * freed moments before (their arenas peak at about 25 MB, by NMT); the JVM hands the compilers' chunks back to the
     * C library within 5 s and trims the C heap every 5 s ({@code -XX:TrimNativeHeapInterval}), so 12 s later the
     * figure is what an idle replica keeps.
     */
    private static void footprint(Figures figures) throws Exception {
        List<ProcessHandle> workers = ProcessHandle.current()
                .descendants()
                .filter(p -> HostProcesses.commandLine(p.pid()).contains(WorkerLaunch.MAIN_CLASS))
                .filter(p -> p.info().command().orElse("").endsWith("/java"))
                .toList();
        if (workers.isEmpty()) {
            throw new IllegalStateException("no function worker JVM among this JVM's descendants");
        }
        double justAfter = largestRss(workers);
        // a smoke run shows the figure is taken, not what an idle replica keeps: it does not wait for the trims
        Thread.sleep(figures.smoke() ? SETTLE_MILLIS / 6 : SETTLE_MILLIS);
        double settled = largestRss(workers);
        List<String> flags = Arrays.stream(
                        HostProcesses.commandLine(workers.get(0).pid()).split(" "))
                .filter(a -> a.startsWith("-X"))
                .toList();
        List<String> idle = new ArrayList<>();
        idle.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        idle.addAll(flags);
        idle.addAll(List.of("-cp", System.getProperty("java.class.path"), IdleJvm.class.getName()));
        Process p = new ProcessBuilder(idle).redirectErrorStream(true).start();
        try (BufferedReader out =
                new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line = out.readLine();
            if (!"ready".equals(line)) {
                throw new IllegalStateException("the idle JVM said " + line);
            }
            String baseline = "idle JVM " + String.join(" ", flags);
            double idleJvm = HostProcesses.rssMegabytes(p.pid());
            String largest = " (largest of " + workers.size() + ")";
            figures.value("function: worker RSS, just after the calls" + largest, "MB", justAfter, baseline, idleJvm);
            figures.value("function: worker RSS, settled" + largest, "MB", settled, baseline, idleJvm);
        } finally {
            p.getOutputStream().close();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    /**
     * Calls from 16 callers until the pool runs {@link #MAX_REPLICAS} replicas: on a loaded machine a replica takes
     * longer to start than the warm-up lasts, and one started inside a measured window would measure a JVM start.
     */
    private static void scaledOut(DeployedTally tally, Runnable call) throws Exception {
        long giveUp = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (replicas(tally) < MAX_REPLICAS && System.nanoTime() < giveUp) {
            rate(16, call, 1);
        }
        rate(16, call, 1); // the replica that just started, warmed up too
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
        return ns;
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
