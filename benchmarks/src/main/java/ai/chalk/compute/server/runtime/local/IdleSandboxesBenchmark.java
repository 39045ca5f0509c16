package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.benchmarks.Benchmark;
import ai.chalk.compute.benchmarks.Figures;
import ai.chalk.compute.benchmarks.HostProcesses;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.auth.Authentication;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.stream.Stream;

/**
 * Many idle sandboxes on the local runtime, created and terminated through the server's gRPC API (in-process) by
 * {@link #CALLERS} callers at once, as an agent platform would: creates and terminates per second against bare
 * {@code bwrap ... sleep} processes started and killed at the same concurrency; what each idle sandbox costs the server
 * (heap after GC) and the host (processes, file descriptors, memory, kernel slab) against such a bare process; and a
 * warm exec with all of them alive against the same exec with one alive.
 *
 * <p>Arguments: {@code sandboxes=N} (default 2,000, 50 in a smoke run); {@code warmup=R} rounds of up to
 * {@code 2 * CALLERS} creates, an exec in each and their terminates before anything of the server is measured (default
 * {@value #WARMUP_ROUNDS}, 1 in a smoke run): a server that has run for a while has compiled its create and terminate
 * paths, and with one round the JIT compilers still took about a quarter of the machine's CPU while the measured
 * creates ran (perf, December 7), and the server's CPU per create + terminate was about 40% higher. The server's limit
 * on sandboxes is raised to N for the run; every sandbox and bare process is ended before the benchmark returns, failed
 * or not.
 */
public final class IdleSandboxesBenchmark implements Benchmark {

    /** Callers creating (and then terminating) at once. */
    static final int CALLERS = 16;
    /** The targets of the issue: creates and terminates per second, server heap per idle sandbox. */
    static final double TARGET_RATE = 200;

    static final double TARGET_HEAP_KB = 64;

    /** Warm-up rounds by default (see the class comment). */
    static final int WARMUP_ROUNDS = 20;

    @Override
    public void run(Figures figures, Path state) throws Exception {
        int n = figures.option("sandboxes", figures.smoke() ? 50 : 2000);
        int rounds = figures.rounds(200);
        int warmup = figures.option("warmup", figures.smoke() ? 1 : WARMUP_ROUNDS);
        hostLimits(n);
        SandboxDefaults d = SandboxDefaults.STANDARD;
        // one environment runs at most half of the server's sandboxes: twice what the benchmark keeps alive
        LocalRuntimeOptions local = LocalRuntimeOptions.builder()
                .defaults(new SandboxDefaults(
                        d.memoryBytes(),
                        d.layerBytes(),
                        d.pidsMax(),
                        d.openFiles(),
                        Math.max(2 * (n + 8), d.maxSandboxes())))
                .build();
        HostCost bare = bareSandboxes(state, n);
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(state.resolve("server"))
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .runtime(local)
                        .build()
                        .start();
                Closing channel = new Closing(
                        InProcessChannelBuilder.forName(server.inProcessName()).build())) {
            System.out.println(
                    "isolation: " + server.isolation().level() + ", " + n + " idle sandboxes, " + CALLERS + " callers");
            SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes =
                    SandboxServiceGrpc.newBlockingStub(channel.channel);
            SandboxProcessServiceGrpc.SandboxProcessServiceBlockingStub processes =
                    SandboxProcessServiceGrpc.newBlockingStub(channel.channel);
            ConcurrentLinkedQueue<String> alive = new ConcurrentLinkedQueue<>();
            try {
                // warm up the server's create, exec and terminate paths
                System.out.println("warm-up: " + warmup + " rounds of " + Math.min(n, 2 * CALLERS)
                        + " creates, execs and terminates");
                for (int round = 0; round < warmup; round++) {
                    for (String id : createAll(sandboxes, Math.min(n, 2 * CALLERS), alive)
                            .ids()) {
                        processes.execCommand(exec(id));
                    }
                    terminateAll(sandboxes, new ArrayList<>(alive), alive);
                }

                String first = create(sandboxes);
                alive.add(first);
                long[] execOne = execs(processes, first, rounds);

                HostSnapshot before = HostSnapshot.take();
                long childrenBefore = HostSnapshot.childrenCpuNow();
                long kernelBefore = HostSnapshot.kernelCpuNow();
                Created created = createAll(sandboxes, n - 1, alive);
                Thread.sleep(2000); // let spares and pool refills settle: an idle sandbox is what is left then
                HostSnapshot after = HostSnapshot.take();
                long childrenAfter = HostSnapshot.childrenCpuNow();
                long[] execMany = execs(processes, first, rounds);
                long[] execNewest =
                        execs(processes, created.ids().get(created.ids().size() - 1), rounds);

                List<String> all = new ArrayList<>(alive);
                long cpuBeforeTerminate = HostSnapshot.cpuNow();
                long childrenCreated = HostSnapshot.childrenCpuNow();
                double terminated = terminateAll(sandboxes, all, alive);
                Thread.sleep(500); // the inits' exits reaped
                long cpu = after.cpuNanos() - before.cpuNanos() + HostSnapshot.cpuNow() - cpuBeforeTerminate;
                long children = childrenAfter - childrenBefore + HostSnapshot.childrenCpuNow() - childrenCreated;
                long kernel = HostSnapshot.kernelCpuNow() - kernelBefore; // spans the exec rounds too: a bound
                System.out.printf(
                        "CPU per create + terminate: %.1f ms in the server's JVM, %.1f ms in its reaped processes%n",
                        (cpu - children) / 1e6 / (n - 1), children / 1e6 / (n - 1));
                System.out.printf(
                        "  of which in the kernel (system time of the JVM and its reaped processes, exec rounds"
                                + " included): at most %.1f ms%n",
                        kernel / 1e6 / (n - 1));

                figures.value(
                        "idle: creates/s, " + CALLERS + " callers",
                        "/s",
                        created.perSecond(),
                        "bare `bwrap ... sleep` starts/s",
                        bare.startsPerSecond());
                figures.value(
                        "idle: terminates/s, " + CALLERS + " callers",
                        "/s",
                        terminated,
                        "bare `bwrap ... sleep` kills/s",
                        bare.killsPerSecond());
                int m = n - 1;
                figures.value(
                        "idle: server heap per sandbox (after GC)",
                        "KB",
                        (after.heap() - before.heap()) / 1024.0 / m,
                        "target",
                        TARGET_HEAP_KB);
                figures.value(
                        "idle: host processes per sandbox",
                        "procs",
                        (after.processes() - before.processes()) / (double) m,
                        "bare `bwrap ... sleep`",
                        bare.processes());
                figures.value(
                        "idle: server file descriptors per sandbox",
                        "fds",
                        (after.serverFds() - before.serverFds()) / (double) m,
                        "bare `bwrap ... sleep`",
                        bare.serverFds());
                figures.value(
                        "idle: server threads per sandbox",
                        "threads",
                        (after.threads() - before.threads()) / (double) m,
                        "bare `bwrap ... sleep`",
                        bare.threads());
                figures.value(
                        "idle: CPU per create + terminate",
                        "ms",
                        cpu / 1e6 / m,
                        "bare `bwrap ... sleep` start + kill",
                        bare.cpuMillis());
                figures.value(
                        "idle: processes' memory per sandbox (PSS)",
                        "KB",
                        (after.pss() - before.pss()) / 1024.0 / m,
                        "bare `bwrap ... sleep`",
                        bare.pssKb());
                figures.value(
                        "idle: kernel slab per sandbox",
                        "KB",
                        (after.slab() - before.slab()) / 1024.0 / m,
                        "bare `bwrap ... sleep`",
                        bare.slabKb());
                figures.latency("idle: warm exec `true`, " + n + " alive", execMany, "the same, 1 alive", execOne);
                figures.latency(
                        "idle: exec `true` in the newest, " + n + " alive", execNewest, "warm exec, 1 alive", execOne);
                System.out.printf(
                        "targets: creates/s %s, terminates/s %s (>= %.0f), heap %s (<= %.0f KB)%n",
                        created.perSecond() >= TARGET_RATE ? "met" : "MISSED",
                        terminated >= TARGET_RATE ? "met" : "MISSED",
                        TARGET_RATE,
                        (after.heap() - before.heap()) / 1024.0 / m <= TARGET_HEAP_KB ? "met" : "MISSED",
                        TARGET_HEAP_KB);
            } finally {
                if (!alive.isEmpty()) {
                    System.err.println("terminating " + alive.size() + " sandboxes left by a failure");
                    terminateAll(sandboxes, new ArrayList<>(alive), alive);
                }
            }
        }
    }

    /** Refuses to start what this host cannot hold, before anything is made. */
    private static void hostLimits(int n) throws IOException {
        // read line by line: Files.readString trusts the size procfs reports
        long pidMax = Long.parseLong(
                Files.readAllLines(Path.of("/proc/sys/kernel/pid_max")).get(0).strip());
        long threadsMax = Long.parseLong(Files.readAllLines(Path.of("/proc/sys/kernel/threads-max"))
                .get(0)
                .strip());
        long running = countProcesses();
        System.out.printf(
                "host: pid_max %d, threads-max %d, %d processes running, open files (soft) %s%n",
                pidMax, threadsMax, running, softOpenFiles());
        if (running + 6L * n > Math.min(pidMax, threadsMax) * 3 / 4) {
            throw new IllegalStateException(n + " sandboxes (up to 6 processes each) would take more than three"
                    + " quarters of this host's pids (pid_max " + pidMax + "): run fewer (sandboxes=N)");
        }
    }

    private static String softOpenFiles() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
            if (line.startsWith("Max open files")) {
                return line.substring(26).strip().split("\\s+")[0];
            }
        }
        return "?";
    }

    // ---- the baseline: bare bubblewrap processes, each with a sandbox's namespaces, sleeping ----

    /** What N bare sandboxes cost, each with its own namespaces and read-only system view, sleeping. */
    record HostCost(
            double startsPerSecond,
            double killsPerSecond,
            double processes,
            double serverFds,
            double threads,
            double pssKb,
            double slabKb,
            double cpuMillis) {}

    private static HostCost bareSandboxes(Path state, int n) throws Exception {
        List<String> command = HostProcesses.bareBwrap(List.of("--tmpfs", "/tmp"), "sleep", "infinity");
        ConcurrentLinkedQueue<Process> started = new ConcurrentLinkedQueue<>();
        // --die-with-parent follows the thread that started bubblewrap: the starting threads live until the kills
        ExecutorService spawners = Executors.newFixedThreadPool(CALLERS);
        try {
            HostSnapshot before = HostSnapshot.take();
            double starts = concurrently(spawners, n, i -> {
                try {
                    Process p = new ProcessBuilder(command)
                            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                            .redirectError(ProcessBuilder.Redirect.DISCARD)
                            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                            .start();
                    started.add(p);
                    return null;
                } catch (IOException e) {
                    throw new IllegalStateException("bwrap: " + e.getMessage(), e);
                }
            });
            Thread.sleep(2000);
            HostSnapshot after = HostSnapshot.take();
            long cpuStarted = HostSnapshot.cpuNow();
            List<Process> all = new ArrayList<>(started);
            double kills = concurrently(spawners, all.size(), i -> {
                Process p = all.get(i);
                destroyWithInner(p);
                try {
                    p.waitFor();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                started.remove(p);
                return null;
            });
            long cpu = after.cpuNanos() - before.cpuNanos() + HostSnapshot.cpuNow() - cpuStarted;
            return new HostCost(
                    starts,
                    kills,
                    (after.processes() - before.processes()) / (double) n,
                    (after.serverFds() - before.serverFds()) / (double) n,
                    (after.threads() - before.threads()) / (double) n,
                    (after.pss() - before.pss()) / 1024.0 / n,
                    (after.slab() - before.slab()) / 1024.0 / n,
                    cpu / 1e6 / n);
        } finally {
            for (Process p : started) {
                destroyWithInner(p);
            }
            spawners.shutdownNow();
        }
    }

    /**
     * Kills a bare bubblewrap and what runs in its pid namespace: its pid 1 dies with it by its parent-death signal,
     * unless bubblewrap died before that was set (then nothing would ever end it).
     */
    private static void destroyWithInner(Process p) {
        List<Long> inner = children(p.pid());
        p.destroyForcibly();
        inner.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
    }

    /**
     * The children of single-threaded process {@code pid}, from {@code /proc/PID/task/PID/children}: killing a bare
     * bubblewrap's child ends its pid namespace. ProcessHandle's children and descendants read every process of the
     * host instead, which made 2,000 kills cost 2,000 scans of some 7,000 processes, a baseline no runtime pays.
     */
    private static List<Long> children(long pid) {
        try {
            // line by line: Files.readString trusts the size procfs reports
            String line = String.join(
                            " ",
                            Files.readAllLines(
                                    Path.of("/proc", Long.toString(pid), "task", Long.toString(pid), "children")))
                    .strip();
            return line.isEmpty()
                    ? List.of()
                    : Stream.of(line.split("\\s+")).map(Long::parseLong).toList();
        } catch (IOException e) {
            return List.of(); // gone already
        }
    }

    // ---- the server ----

    private record Created(List<String> ids, double perSecond) {}

    private static Created createAll(
            SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes, int count, ConcurrentLinkedQueue<String> alive)
            throws Exception {
        List<String> ids = Collections.synchronizedList(new ArrayList<>());
        double rate = concurrently(count, i -> {
            String id = create(sandboxes);
            alive.add(id);
            ids.add(id);
            return null;
        });
        return new Created(List.copyOf(ids), rate);
    }

    private static String create(SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes) {
        return sandboxes
                .withDeadlineAfter(120, TimeUnit.SECONDS)
                .createSandbox(CreateSandboxRequest.getDefaultInstance())
                .getSandbox()
                .getId();
    }

    /** Terminates {@code ids} with {@link #CALLERS} callers; returns terminates per second. */
    private static double terminateAll(
            SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes,
            List<String> ids,
            ConcurrentLinkedQueue<String> alive)
            throws Exception {
        return concurrently(ids.size(), i -> {
            sandboxes
                    .withDeadlineAfter(120, TimeUnit.SECONDS)
                    .terminateSandbox(TerminateSandboxRequest.newBuilder()
                            .setSandboxId(ids.get(i))
                            .build());
            alive.remove(ids.get(i));
            return null;
        });
    }

    private static ExecCommandRequest exec(String id) {
        return ExecCommandRequest.newBuilder()
                .setSandboxId(id)
                .setCommand("true")
                .build();
    }

    /** Warm execs of {@code true} in sandbox {@code id}, one after the other, after a few to warm up. */
    private static long[] execs(
            SandboxProcessServiceGrpc.SandboxProcessServiceBlockingStub processes, String id, int rounds) {
        for (int i = 0; i < 10; i++) {
            processes.execCommand(exec(id));
        }
        long[] out = new long[rounds];
        for (int i = 0; i < rounds; i++) {
            long t = System.nanoTime();
            int code = processes
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .execCommand(exec(id))
                    .getExitCode();
            out[i] = System.nanoTime() - t;
            if (code != 0) {
                throw new IllegalStateException("`true` exited with " + code + " in sandbox " + id);
            }
        }
        return out;
    }

    /** Runs {@code task(0..count-1)} on {@link #CALLERS} threads; returns tasks per second, or fails with the first failure. */
    private static double concurrently(int count, IntFunction<Void> task) throws Exception {
        ExecutorService callers = Executors.newFixedThreadPool(CALLERS);
        try {
            return concurrently(callers, count, task);
        } finally {
            callers.shutdownNow();
        }
    }

    private static double concurrently(ExecutorService callers, int count, IntFunction<Void> task) throws Exception {
        long t = System.nanoTime();
        List<Future<Void>> all = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int k = i;
            all.add(callers.submit(() -> task.apply(k)));
        }
        for (Future<Void> f : all) {
            f.get();
        }
        return count / ((System.nanoTime() - t) / 1e9);
    }

    private static long countProcesses() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc"))) {
            return s.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit))
                    .count();
        }
    }

    /**
     * The host as the figures compare it: this JVM's heap after GC, open file descriptors and threads (the JDK keeps a
     * {@code process reaper} thread waiting for each child process; idle ones kept for reuse are not counted), the
     * processes descended from it (and their
     * proportional memory), the kernel's slab, and the CPU time this JVM and its reaped children used.
     */
    record HostSnapshot(long heap, long processes, long serverFds, long threads, long pss, long slab, long cpuNanos) {

        static HostSnapshot take() throws IOException, InterruptedException {
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(100);
            }
            long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
            long fds;
            try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
                fds = s.count();
            }
            long slab = 0;
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("Slab:")) {
                    slab = Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
            List<ProcessHandle> descendants =
                    ProcessHandle.current().descendants().toList();
            long pss = 0;
            for (ProcessHandle p : descendants) {
                pss += pss(p.pid());
            }
            // the reaper threads no child needs now wait in their pool for a minute: not counted
            long threads = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> !t.getName().startsWith("process reaper") || t.getState() == Thread.State.RUNNABLE)
                    .count();
            return new HostSnapshot(heap, descendants.size(), fds, threads, pss, slab, cpuNow());
        }

        /** The proportional set size of process {@code pid} in bytes: its shared pages split among their users. */
        private static long pss(long pid) {
            try {
                for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps_rollup"))) {
                    if (line.startsWith("Pss:")) {
                        return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                    }
                }
            } catch (IOException e) {
                // gone meanwhile
            }
            return 0;
        }

        /**
         * CPU time of this JVM and of the children it has reaped (with theirs), from {@code /proc/self/stat}: what a
         * create or terminate costs the machine, whatever else runs on it.
         */
        static long cpuNow() throws IOException {
            return cpu(11, 14); // utime, stime, cutime, cstime (fields 14 to 17)
        }

        /** The system (kernel) part of {@link #cpuNow()}: stime and cstime. */
        static long kernelCpuNow() throws IOException {
            return cpu(12, 12) + cpu(14, 14);
        }

        /** The part of {@link #cpuNow()} of the reaped children. */
        static long childrenCpuNow() throws IOException {
            return cpu(13, 14);
        }

        private static long cpu(int from, int to) throws IOException {
            String stat = Files.readAllLines(Path.of("/proc/self/stat")).get(0);
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            long ticks = 0;
            for (int i = from; i <= to; i++) {
                ticks += Long.parseLong(f[i]);
            }
            return ticks * 10_000_000L; // USER_HZ is 100 on Linux
        }
    }

    /** The in-process channel, shut down with the benchmark. */
    private record Closing(ManagedChannel channel) implements AutoCloseable {
        @Override
        public void close() throws InterruptedException {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
