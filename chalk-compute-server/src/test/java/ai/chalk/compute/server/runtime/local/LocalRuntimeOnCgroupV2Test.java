package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupFiles;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupV2;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The local runtime on the cgroup v2 driver, in a fresh group of a real unified hierarchy ({@code /sys/fs/cgroup} on
 * a v2 host, {@code /sys/fs/cgroup/unified} on a hybrid one like these machines, where the limiting controllers are
 * bound to v1 and only the core files work): sandboxes' processes live in its groups, suspend freezes them, killTree
 * reaches daemons, terminate removes the groups.
 */
@Tag("alone")
class LocalRuntimeOnCgroupV2Test {

    @TempDir
    Path state;

    private Path own;
    private LocalRuntime runtime;

    @BeforeEach
    void start() throws Exception {
        Path unified = Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers"))
                ? Path.of("/sys/fs/cgroup")
                : Path.of("/sys/fs/cgroup/unified");
        assumeTrue(Files.exists(unified.resolve("cgroup.procs")), "no cgroup2 mounted at " + unified);
        own = unified.resolve("chalk-runtime-test-" + LocalTesting.newId());
        Files.createDirectory(own);
        runtime = LocalRuntime.builder(state)
                .cgroups(key -> CgroupV2.at(own, key))
                .build();
    }

    @AfterEach
    void stop() throws Exception {
        if (runtime != null) {
            runtime.close();
        }
        if (own != null) {
            for (Path p : Files.walk(own)
                    .filter(Files::isDirectory)
                    .sorted((a, b) -> b.compareTo(a))
                    .toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    @Test
    void theReportSaysWhatV2GivesHere() {
        assertThat(runtime.cgroups().version()).isEqualTo("cgroup v2");
        if (runtime.cgroups().controllers().isEmpty()) {
            assertThat(runtime.isolation().detail())
                    .contains("no cgroup limits (cpu is not available in " + own.resolve("cgroup.controllers"))
                    .contains("limits are NOT enforced")
                    .contains("a cgroup v2 group per exec lets killTree reach re-parented daemons");
        }
        assertThat(runtime.isolation().detail()).contains("the freezer suspends sandboxes");
    }

    @Test
    void processesLiveInTheSandboxsGroupsAndTerminateRemovesThem() throws Exception {
        LocalSandbox sb = (LocalSandbox) runtime.start(spec());
        Path dir = sb.groups().orElseThrow().dir("freezer").orElseThrow();
        assertThat(dir)
                .isEqualTo(own.resolve("chalk-compute")
                        .resolve(dir.getParent().getFileName())
                        .resolve(sb.id()));
        assertThat(CgroupFiles.procs(dir.resolve("init"), false)).contains(sb.initPid());
        LocalProcess p = (LocalProcess) sb.exec(command("sleep", "4831"));
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> CgroupFiles.procs(dir, true).contains(p.hostPid()));
        assertThat(Files.readString(Path.of("/proc", Long.toString(p.hostPid()), "cgroup")))
                .containsPattern("(?m)^0::.*/chalk-compute/.*/" + sb.id() + "/x[0-9]+$");

        sb.terminate(Duration.ZERO);

        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isNotNull();
        assertThat(dir).doesNotExist();
    }

    @Test
    void suspendFreezesTheSandboxAndResumeLetsItContinue() throws Exception {
        LocalSandbox sb = (LocalSandbox) runtime.start(spec());
        sh(sb, "setsid sh -c 'while :; do echo x >> /workspace/t; sleep 0.02; done' > /dev/null 2>&1 < /dev/null &")
                .ok();
        Path t = sb.layer().resolve("workspace/t");
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.exists(t) && Files.size(t) > 10);
        Path dir = sb.groups().orElseThrow().dir("freezer").orElseThrow();

        sb.suspend();
        assertThat(Files.readString(dir.resolve("cgroup.events"))).contains("frozen 1");
        long size = Files.size(t);
        Thread.sleep(300);
        assertThat(Files.size(t)).isEqualTo(size);

        sb.resume();
        assertThat(Files.readString(dir.resolve("cgroup.events"))).contains("frozen 0");
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.size(t) > size);
        sb.terminate(Duration.ZERO);
    }

    @Test
    void killTreeReachesDaemonsThroughTheExecsGroupWithoutThePidsController() throws Exception {
        LocalSandbox sb = (LocalSandbox) runtime.start(spec());
        RuntimeProcess p = sb.exec(LocalTesting.sh("(setsid sleep 4832 &); sleep 4833"));
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> LocalTesting.hostProcessesRunning("sleep 4832").size() == 1);
        RuntimeProcess other = sb.exec(command("sleep", "4834"));

        p.killTree();

        assertThat(LocalTesting.hostProcessesRunning("sleep 4832")).isEmpty();
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));
        assertThat(LocalTesting.hostProcessesRunning("sleep 4834")).hasSize(1);
        other.killTree();
        sb.terminate(Duration.ZERO);
    }
}
