package ai.chalk.compute.server.runtime.docker;

import static ai.chalk.compute.server.runtime.RuntimeTesting.processesInSandbox;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Finding 16 as attacks: a server killed and never restarted must not leave containers running forever, whatever the
 * sandbox does to its init's keep-alive; a restarted server must not leave running what execs cut by the kill
 * started.
 */
@Tag("alone")
class DockerLifetimeSecurityTest extends DockerTesting.WithRuntime {

    private static String inspect(String container, String format) {
        DockerTesting.Result r = DockerTesting.docker("inspect", "--format", format, container);
        return r.code() == 0 ? r.output().trim() : "gone";
    }

    @Test
    void aContainerEndsItselfAfterItsLifetimeWithNoServerLeftEvenWithItsKeepAliveStopped() throws Exception {
        runtime.close();
        runtime = DockerRuntime.builder(state)
                .defaultImage(DockerTesting.image())
                .lifetimeMargin(Duration.ofSeconds(1))
                .build();
        DockerSandbox sb = (DockerSandbox) runtime.start(RuntimeTesting.spec(), Duration.ofSeconds(3));
        String container = sb.containerId();
        try {
            assertThat(inspect(container, "{{json .Config.Cmd}}")).isEqualTo("[\"chalk-init\",\"4\"]");
            // the sandbox freezes the init's keep-alive and leaves a process that would run for an hour
            RuntimeTesting.sh(
                            sb,
                            "ps -o pid,ppid,comm | awk '$2 == 1 && $3 == \"sleep\" {print $1}'"
                                    + " | xargs kill -STOP; setsid sleep 3600 > /dev/null 2>&1 < /dev/null &")
                    .ok();
            // this container's own sleep, by its pid namespace (other tests may have a "sleep 3600" of their own)
            String namespace = Procfs.pidNamespace(Long.parseLong(inspect(container, "{{.State.Pid}}")))
                    .orElseThrow();
            List<Long> left = RuntimeTesting.hostProcessesRunning("sleep 3600").stream()
                    .filter(pid ->
                            Procfs.pidNamespace(pid).map(namespace::equals).orElse(false))
                    .toList();
            assertThat(left).hasSize(1);
            runtime.abandon(); // as a server killed for good: nobody will ever terminate the sandbox
            long started = System.nanoTime();
            Awaitility.await()
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> !inspect(container, "{{.State.Running}}").equals("true"));
            assertThat((System.nanoTime() - started) / 1_000_000_000.0).isLessThan(15);
            assertThat(inspect(container, "{{.State.ExitCode}}")).isIn("0", "gone");
            // the kernel kills what was left in the container's pid namespace as its init ends
            assertThat(left).noneMatch(Procfs::running);
        } finally {
            DockerTesting.docker("rm", "-f", container);
            runtime = DockerTesting.runtime(state);
        }
    }

    /**
     * What pid 1 writes goes to the engine's log of the container, and any exec can write there: the engine's default
     * log has no size, so a sandbox filled the host's disk. It is one file of at most 1 MiB.
     */
    @Test
    void whatASandboxWritesToItsInitsOutputIsBoundedOnTheHostsDisk() throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(RuntimeTesting.spec());
        RuntimeTesting.sh(sb, "yes 0123456789012345678901234567890123456789 | head -c 30000000 > /proc/1/fd/1")
                .ok();
        String log = inspect(sb.containerId(), "{{.LogPath}}");
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(java.nio.file.Files.size(java.nio.file.Path.of(log)))
                        .isGreaterThan(100_000));
        assertThat(java.nio.file.Files.size(java.nio.file.Path.of(log))).isLessThan(2L << 20);
        assertThat(inspect(sb.containerId(), "{{json .HostConfig.LogConfig}}"))
                .isEqualTo("{\"Type\":\"json-file\",\"Config\":{\"max-file\":\"1\",\"max-size\":\"1m\"}}");
    }

    /**
     * A sandbox writing to its own file system without end: the engine bounds a layer only on xfs with project quotas,
     * so here it wrote until the host's disk was full. The disk's reserve is set 300 MiB below what is free now: the
     * writer is ended once past it, its layer goes, and a sandbox that wrote little runs on.
     */
    @Test
    void aSandboxFillingTheHostsDiskThroughItsLayerIsEndedAndItsLayerGoes() throws Exception {
        runtime.close();
        java.nio.file.Path root = java.nio.file.Path.of(DockerTesting.docker("info", "--format", "{{.DockerRootDir}}")
                .output()
                .trim());
        long free = java.nio.file.Files.getFileStore(root).getUsableSpace();
        runtime = DockerRuntime.builder(state)
                .defaultImage(DockerTesting.image())
                .layerDiskReserve(free - (300L << 20))
                .build();
        assertThat(runtime.isolation().detail()).contains("the one that wrote most is ended");
        RuntimeSandbox quiet = runtime.start(RuntimeTesting.spec());
        RuntimeTesting.sh(quiet, "head -c 1000000 /dev/zero > /small").ok();
        DockerSandbox writer = (DockerSandbox) runtime.start(RuntimeTesting.spec());
        RuntimeProcess fill = writer.exec(RuntimeTesting.sh("dd if=/dev/zero of=/big bs=1M count=3000"));
        String why = writer.onStopped().get(60, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(why)
                .startsWith("the sandbox wrote ")
                .contains("MiB to its file system, the most of this server's sandboxes, while the server's disk has");
        assertThat(fill.onExit().get(10, java.util.concurrent.TimeUnit.SECONDS).exitCode())
                .isNotEqualTo(java.util.OptionalInt.of(0));
        assertThat(inspect(writer.containerId(), "{{.Id}}")).isEqualTo("gone");
        assertThat(java.nio.file.Files.getFileStore(root).getUsableSpace()).isGreaterThan(free - (200L << 20));
        assertThat(RuntimeTesting.sh(quiet, "wc -c < /small").ok().out().trim()).isEqualTo("1000000");
    }

    @Test
    void aSandboxWithoutALifetimeKeepsItsInitRunning() throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(RuntimeTesting.spec());
        assertThat(inspect(sb.containerId(), "{{json .Config.Cmd}}")).isEqualTo("[\"chalk-init\"]");
        RuntimeTesting.sh(sb, "ps -o pid,ppid,comm | awk '$2 == 1 && $3 == \"sleep\" {print $1}' | xargs kill -KILL")
                .ok();
        Thread.sleep(300);
        assertThat(RuntimeTesting.sh(sb, "echo alive").ok().out()).isEqualTo("alive\n");
        assertThat(RuntimeTesting.sh(sb, "ps -o ppid,comm | awk '$1 == 1 && $2 == \"sleep\"' | wc -l")
                        .ok()
                        .out()
                        .strip())
                .isEqualTo("1");
    }

    @Test
    void anAdoptingServerKillsWhatCutExecsLeftButKeepsTheEntrypoint() throws Exception {
        SandboxSpec spec = new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/",
                ResourceLimits.NONE,
                false,
                List.of("/bin/sh", "-c", "sleep 4731 & exec sleep 4732"));
        RuntimeSandbox sb = runtime.start(spec);
        RuntimeTesting.sh(sb, "setsid sleep 4733 > /dev/null 2>&1 < /dev/null &")
                .ok();
        RuntimeProcess cut = sb.exec(RuntimeTesting.sh("sleep 4734 & exec sleep 4735"));
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> processesInSandbox(sb, "sleep 4735") == 1
                        && processesInSandbox(sb, "sleep 4731") == 1
                        && processesInSandbox(sb, "sleep 4732") == 1);
        assertThat(cut.onExit()).isNotDone();
        runtime.abandon(); // the server is killed: the exec's stream is cut, its processes keep running
        runtime = DockerTesting.runtime(state);
        Collection<RuntimeSandbox> adopted = runtime.reconcile(List.of(spec.id()));
        assertThat(adopted).hasSize(1);
        RuntimeSandbox again = adopted.iterator().next();
        for (String leftover : List.of("sleep 4733", "sleep 4734", "sleep 4735")) {
            assertThat(processesInSandbox(again, leftover)).as(leftover).isZero();
            assertThat(RuntimeTesting.hostProcessesRunning(leftover))
                    .as(leftover)
                    .isEmpty();
        }
        assertThat(processesInSandbox(again, "sleep 4731"))
                .as("the entrypoint's child")
                .isEqualTo(1);
        assertThat(processesInSandbox(again, "sleep 4732")).as("the entrypoint").isEqualTo(1);
        assertThat(RuntimeTesting.sh(again, "echo ok").ok().out()).isEqualTo("ok\n");
        again.terminate(Duration.ZERO);
    }
}
