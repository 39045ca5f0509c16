package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.benchmarks.Benchmark;
import ai.chalk.compute.benchmarks.Figures;
import ai.chalk.compute.benchmarks.HostProcesses;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.LatencyRounds;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.seccomp.SyscallFilter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The local runtime in-process, next to the bare tools measured in the same run: create + first exec and terminate
 * against a bare {@code bwrap ... true} with a sandbox's namespaces, mounts and syscall filter (without bubblewrap, a
 * bare {@code unshare ... true} of the same namespaces); a warm exec against a
 * bare {@code nsenter ... true} into the same sandbox, back to back and 10 ms apart alike; then create and terminate
 * of an idle sandbox through the server over gRPC.
 */
public final class LocalRuntimeBenchmark implements Benchmark {

    @Override
    public void run(Figures figures, Path state) throws Exception {
        int rounds = figures.rounds(40);
        try (LocalRuntime runtime = new LocalRuntime(state.resolve("runtime"), LocalIsolation.AUTO)) {
            measure(figures, state, rounds, runtime);
        } finally {
            SandboxDevices.unmountPtys(state.resolve("bench-pts")); // the bare tool's, mounted on the host
        }
        throughTheServer(figures, state.resolve("server"), rounds);
    }

    private static void measure(Figures figures, Path state, int rounds, LocalRuntime runtime) throws Exception {
        System.out.println("isolation: " + runtime.isolation().level());
        HostProcesses.BareCommand bare = runtime.tools().get("bwrap").isPresent()
                ? new HostProcesses.BareCommand("bare `bwrap ... true`", bareBubblewrap(runtime, state))
                : HostProcesses.bareSandboxTrue();
        LatencyRounds r =
                LatencyRounds.measure(runtime, LocalTesting::spec, rounds, figures.smoke() ? 2 : 10, bare::time);
        String bwrap = bare.label();
        figures.latency("local: create + first exec `true`", r.createAndExec(), bwrap, r.bare());
        figures.latency("local: create", r.create(), bwrap, r.bare());
        figures.latency("local: terminate idle (default grace)", r.terminate(), bwrap, r.bare());

        // the floor of an exec: nsenter into the warm sandbox's init, measured around our own execs
        List<String> nsenter = HostProcesses.nsenterTrue(HostProcesses.newestSandboxInit());
        long[] nsenterBackToBack = new long[r.warm().length];
        for (int i = 0; i < nsenterBackToBack.length; i++) {
            nsenterBackToBack[i] = HostProcesses.time(nsenter);
        }
        long[] nsenterSpaced = new long[r.spaced().length];
        for (int i = 0; i < nsenterSpaced.length; i++) {
            Thread.sleep(10);
            nsenterSpaced[i] = HostProcesses.time(nsenter);
        }
        figures.latency(
                "local: warm exec `true`, back to back", r.warm(), "bare `nsenter ... true`", nsenterBackToBack);
        figures.latency(
                "local: warm exec `true`, 10 ms apart",
                r.spaced(),
                "bare `nsenter ... true`, 10 ms apart",
                nsenterSpaced);
        r.warmSandbox().terminate(LatencyRounds.DEFAULT_GRACE);
        pooled(figures, state.resolve("runtime-pooled"), rounds, figures.smoke() ? 2 : 10, bare);
    }

    /**
     * Create + first exec with sandboxes started ahead of time ({@link LocalRuntime.Builder#poolSize}), the pool
     * refilled between creates (a create that finds it empty takes the normal path measured above), next to the same
     * bare tool.
     */
    private static void pooled(Figures figures, Path state, int rounds, int warmups, HostProcesses.BareCommand bare)
            throws Exception {
        try (LocalRuntime runtime = LocalRuntime.builder(state).poolSize(2).build()) {
            long[] bareTimes = new long[rounds];
            long[] create = new long[rounds];
            long[] createAndExec = new long[rounds];
            int handedOver = 0;
            for (int i = -warmups; i < rounds; i++) { // the first create wants the spec: the pool fills from then on
                if (i > -warmups) {
                    awaitFull(runtime, 2);
                }
                long t0 = System.nanoTime();
                bare.time();
                long t1 = System.nanoTime();
                LocalSandbox sb = (LocalSandbox) runtime.start(LocalTesting.spec());
                long t2 = System.nanoTime();
                LatencyRounds.runTrue(sb);
                long t3 = System.nanoTime();
                sb.terminate(LatencyRounds.DEFAULT_GRACE);
                if (i >= 0) {
                    bareTimes[i] = t1 - t0;
                    create[i] = t2 - t1;
                    createAndExec[i] = t3 - t1;
                    handedOver += sb.name().equals(sb.id()) ? 0 : 1;
                }
            }
            System.out.println("pooled: " + handedOver + " of " + rounds + " creates were hand-overs");
            figures.latency("local, pool ready: create + first exec `true`", createAndExec, bare.label(), bareTimes);
            figures.latency("local, pool ready: create", create, bare.label(), bareTimes);
        }
    }

    private static void awaitFull(LocalRuntime runtime, int size) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (runtime.pooledSandboxes() < size) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the sandbox pool did not refill within a minute");
            }
            Thread.sleep(5);
        }
    }

    /** The raw tool: the same namespaces, mounts and syscall filter as a sandbox's init, running {@code true}. */
    private static List<String> bareBubblewrap(LocalRuntime runtime, Path state) throws Exception {
        Path layer = Files.createDirectories(state.resolve("bench-layer"));
        SandboxFiles.createLayer(layer, runtime.systemView());
        List<String> bare = new ArrayList<>(SyscallFilter.withFileOn(
                SandboxCommands.FILTER_FD, runtime.syscallFilter().file(), List.of()));
        bare.add(runtime.tools().require("bwrap").toString());
        Path devices = state.resolve("bench-dev");
        SandboxDevices.create(devices, 0);
        Path ptys = state.resolve("bench-pts");
        SandboxDevices.mountPtys(ptys); // a sandbox's terminals, as its start mounts them
        SandboxDevices.makeShm(ptys.resolveSibling(SandboxDevices.SHM), OptionalLong.empty()); // and its /dev/shm
        SandboxDevices.makeDev(ptys.resolveSibling(SandboxDevices.DEV), 0); // its /dev
        EmptyDirs.create(ptys.getParent()); // what its masks bind
        List<String> args = SandboxCommands.bubblewrapArgs(
                SandboxMounts.hostView(
                        layer,
                        runtime.systemView(),
                        List.of(),
                        Optional.empty(),
                        runtime.procMasks(),
                        new SandboxMounts.Devices(devices, ptys, 0),
                        "/"),
                "bench",
                "/",
                false);
        bare.addAll(args.subList(0, args.size() - 4)); // without --json-status-fd
        bare.addAll(List.of("--seccomp", Integer.toString(SandboxCommands.FILTER_FD)));
        bare.addAll(List.of("--", "true"));
        return bare;
    }

    /**
     * An idle sandbox's terminate as a client's {@code terminate()} without a grace period reaches it: over gRPC, with
     * the server's default grace, after one command (a sandbox per request), next to the sandbox's create.
     */
    private static void throughTheServer(Figures figures, Path dataDir, int rounds) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            long[] create = new long[rounds];
            long[] terminate = new long[rounds];
            for (int i = -5; i < rounds; i++) { // five rounds to warm up
                long t0 = System.nanoTime();
                String id = server.createSandbox();
                long t1 = System.nanoTime();
                assertThat(server.processes()
                                .execCommand(ExecCommandRequest.newBuilder()
                                        .setSandboxId(id)
                                        .setCommand("true")
                                        .build())
                                .getExitCode())
                        .isZero();
                long t2 = System.nanoTime();
                server.terminate(id);
                long t3 = System.nanoTime();
                if (i >= 0) {
                    create[i] = t1 - t0;
                    terminate[i] = t3 - t2;
                }
            }
            figures.latency(
                    "server (TCP): terminate idle (default grace)", terminate, "create through the server", create);
        }
    }
}
