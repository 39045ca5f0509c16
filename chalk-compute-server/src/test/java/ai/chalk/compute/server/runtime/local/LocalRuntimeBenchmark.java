package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.LatencyReport;
import ai.chalk.compute.server.runtime.LatencyRounds;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Latency of the local runtime next to a bare {@code bwrap ... true} measured in the same run, so the figures can
 * be compared across machines. Prints, never asserts timings.
 */
@Tag("benchmark")
class LocalRuntimeBenchmark {

    private static final int ROUNDS = 40;

    @Test
    void createAndExecLatency(@TempDir Path state) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO)) {
            // the raw tool: the same namespaces and mounts as a sandbox's init, running `true`
            Path layer = Files.createDirectories(state.resolve("bench-layer"));
            SandboxFiles.createLayer(layer, runtime.systemView());
            List<String> bare = new ArrayList<>(ai.chalk.compute.server.runtime.seccomp.SyscallFilter.withFileOn(
                    SandboxCommands.FILTER_FD, runtime.syscallFilter().file(), List.of()));
            bare.add(runtime.tools().require("bwrap").toString());
            Path devices = state.resolve("bench-dev");
            ai.chalk.compute.server.runtime.host.SandboxDevices.create(devices);
            List<String> args = SandboxCommands.bubblewrapArgs(
                    SandboxMounts.hostView(
                            layer,
                            runtime.systemView(),
                            List.of(),
                            java.util.Optional.empty(),
                            runtime.procMasks(),
                            devices,
                            "/"),
                    "bench",
                    "/");
            bare.addAll(args.subList(0, args.size() - 4)); // without --json-status-fd
            bare.addAll(List.of("--seccomp", Integer.toString(SandboxCommands.FILTER_FD)));
            bare.addAll(List.of("--", "true"));

            LatencyRounds r = LatencyRounds.measure(runtime, LocalTesting::spec, ROUNDS, 10, () -> runBare(bare));
            long[] pidTimes = new long[ROUNDS];
            for (int i = 0; i < pidTimes.length; i++) {
                Thread.sleep(10);
                long t = System.nanoTime();
                RuntimeProcess p = r.warmSandbox().exec(command("true"));
                p.pid();
                pidTimes[i] = System.nanoTime() - t;
                p.stdin().close();
                LatencyRounds.drain(p);
            }

            System.out.printf(
                    "%nlocal runtime (%s) latency over %d rounds, JVM pid %d%n",
                    runtime.isolation().level(), ROUNDS, ProcessHandle.current().pid());
            LatencyReport report = new LatencyReport(r.bare(), 36, 6);
            report.line("bare `bwrap ... true` (baseline)", r.bare());
            report.line("create sandbox", r.create());
            report.line("create + first exec `true`", r.createAndExec());
            report.line("warm exec `true`, back to back", r.warm());
            report.line("warm exec `true`, 10 ms apart", r.spaced());
            report.line("warm exec until pid() known", pidTimes);
            report.line("terminate idle (grace 5 s)", r.terminate());
        }
    }

    /**
     * An idle sandbox's terminate as a client's {@code terminate()} without a grace period reaches it: over gRPC, with
     * the server's default grace, after one command (a sandbox per request), next to the sandbox's create.
     */
    @Test
    void terminateOfAnIdleSandboxThroughTheServer(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            long[] create = new long[ROUNDS];
            long[] terminate = new long[ROUNDS];
            for (int i = -5; i < ROUNDS; i++) { // five rounds to warm up
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
            System.out.printf("%nlocal runtime through the server (gRPC over TCP), %d rounds%n", ROUNDS);
            LatencyReport report = new LatencyReport(create, 36, 6);
            report.line("create sandbox (baseline)", create);
            report.line("terminate idle (default grace 5 s)", terminate);
        }
    }

    private static void runBare(List<String> command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().put("PATH", LocalRuntime.DEFAULT_PATH);
        Process p = pb.start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor()).as(new String(out)).isZero();
    }
}
