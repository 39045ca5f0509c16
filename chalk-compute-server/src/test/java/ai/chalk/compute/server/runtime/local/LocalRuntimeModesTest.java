package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.command;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessSpec.TerminalSize;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fallbacks: util-linux without bubblewrap, required isolation without tools, and no isolation at all. */
@Tag("alone")
class LocalRuntimeModesTest {

    @TempDir
    Path state;

    @Test
    void withoutBubblewrapUtilLinuxIsolatesJustTheSame(@TempDir Path tools) throws Exception {
        try (LocalRuntime runtime =
                new LocalRuntime(state, LocalIsolation.AUTO, LocalTesting.pathWithout(tools, "bwrap"))) {
            assertThat(runtime.isolation().level()).isEqualTo("unshare");
            assertThat(runtime.isolation().isolated()).isTrue();
            assertThat(runtime.isolation().detail())
                    .contains("bwrap is not on the PATH")
                    .contains("cgroup v1 controllers cpu, memory, pids in use");
            LocalSandbox sb = (LocalSandbox) runtime.start(spec());

            String ps = sh(sb, "ps -eo pid=,args=").ok().out();
            assertThat(ps.lines().map(l -> Long.parseLong(l.trim().split("\\s+", 2)[0])))
                    .allMatch(p -> p < 100);
            assertThat(ps).doesNotContain("java").doesNotContain(state.toString());
            assertThat(sh(sb, "hostname; pwd").ok().out()).isEqualTo(SandboxHostname.of(sb.id()) + "\n/workspace\n");
            assertThat(sh(sb, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
                            .ok()
                            .out())
                    .isEqualTo("lo\n");
            assertThat(sh(sb, "ip -o link show").ok().out()).contains("lo:").contains("UP");
            for (String attempt : List.of(
                    "touch /usr/x",
                    "touch /etc/x",
                    "mount -t tmpfs none /tmp",
                    "unshare -m true",
                    "test -e /home",
                    "test -e " + state,
                    "cat /etc/shadow | grep -q root",
                    "p=$(cat /proc/sys/kernel/core_pattern); echo \"$p\" > /proc/sys/kernel/core_pattern",
                    "echo 1 > /proc/sys/vm/drop_caches",
                    "echo > /proc/sysrq-trigger")) {
                assertThat(sh(sb, attempt + " 2>/dev/null && echo SUCCEEDED").out())
                        .as(attempt)
                        .doesNotContain("SUCCEEDED");
            }
            assertThat(sh(sb, "grep CapEff /proc/self/status").ok().out()).contains("0000000000000000");
            // files under /proc/fs (and /proc/dynamic_debug where the kernel has it) check no capability when written
            assertThat(sh(sb, "awk '$5 == \"/proc/fs\" {print $6}' /proc/self/mountinfo | cut -d, -f1")
                            .ok()
                            .out())
                    .isEqualTo("ro\n");

            sh(sb, "setsid sleep 4721 > /dev/null 2>&1 < /dev/null &").ok();
            sh(sb, "kill -9 1; kill -KILL -1; echo > /workspace/file");
            assertThat(sh(sb, "ps -eo args; cat /workspace/file").ok().out()).doesNotContain("sleep 4721");
            // orphans are reaped by pid 1: no zombies pile up
            sh(sb, "(sleep 0.05 &) ; (sleep 0.05 &); sleep 0.3").ok();
            assertThat(sh(sb, "ps -eo stat= | grep -c Z || true").out().trim()).isEqualTo("0");

            RuntimeProcess tree = sb.exec(sh("setsid sleep 4722 & sleep 4722"));
            Awaitility.await()
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> LocalTesting.hostProcessesRunning("sleep 4722").size() == 2);
            tree.killTree();
            assertThat(LocalTesting.hostProcessesRunning("sleep 4722")).isEmpty();
            assertThat(tree.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));

            ProcessSpec pty = new ProcessSpec(
                    "/bin/sh",
                    List.of("-c", "test -t 1 && stty size"),
                    Optional.empty(),
                    Map.of(),
                    Optional.of(new TerminalSize(90, 20)));
            assertThat(LocalTesting.collect(sb.exec(pty)).out()).contains("20 90");

            sh(sb, "setsid sleep 4723 > /dev/null 2>&1 < /dev/null &").ok();
            sb.terminate(Duration.ofSeconds(1));
            assertThat(sb.onStopped()).isCompletedWithValue("terminated");
            assertThat(Files.exists(sb.layer(), LinkOption.NOFOLLOW_LINKS)).isFalse();
            assertThat(LocalTesting.hostProcessesRunning("sleep 4723")).isEmpty();

            LocalSandbox crashed = (LocalSandbox) runtime.start(spec());
            HostSignals.signal(crashed.initPid(), 9);
            assertThat(crashed.onStopped().get(10, TimeUnit.SECONDS)).startsWith("the sandbox's init");
            assertThat(Files.exists(crashed.layer(), LinkOption.NOFOLLOW_LINKS)).isFalse();
        }
    }

    @Test
    void withoutCgroupsLimitsAreNotEnforcedAndTheDetailSaysSo() throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO, LocalRuntime.DEFAULT_PATH, false)) {
            assertThat(runtime.isolation().level()).isEqualTo("bubblewrap");
            assertThat(runtime.isolation().detail())
                    .contains("no cgroups (cgroups are switched off)")
                    .contains("limits are NOT enforced")
                    .contains("daemons that re-parent may escape");
            LocalSandbox sb = (LocalSandbox) runtime.start(spec());
            assertThat(sb.groups()).isEmpty();

            RuntimeProcess p = sb.exec(sh("echo $$; exec sleep 4741"));
            String first = new String(p.stdout().readNBytes(2), java.nio.charset.StandardCharsets.UTF_8).trim();
            assertThat(p.pid()).isEqualTo(Long.parseLong(first));
            p.signal(15);
            assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));

            RuntimeProcess tree = sb.exec(sh("sleep 4742 & sleep 4742 & wait"));
            Awaitility.await()
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> LocalTesting.hostProcessesRunning("sleep 4742").size() == 2);
            tree.killTree();
            // SIGKILL is sent, not awaited: the processes vanish once the kernel has run them down
            Awaitility.await()
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> LocalTesting.hostProcessesRunning("sleep 4742").isEmpty());
            assertThat(tree.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(9));

            // terminate does not need cgroups: the pid namespace ends with its init
            sh(sb, "setsid sleep 4743 > /dev/null 2>&1 < /dev/null &").ok();
            sb.terminate(Duration.ofMillis(500));
            assertThat(LocalTesting.hostProcessesRunning("sleep 4743")).isEmpty();
            assertThat(Files.exists(sb.layer(), LinkOption.NOFOLLOW_LINKS)).isFalse();
        }
    }

    @Test
    void requiredRefusesToStartWithoutATool(@TempDir Path empty) {
        assertThatThrownBy(() -> new LocalRuntime(state, LocalIsolation.REQUIRED, empty.toString()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("isolation is required, but no isolation tool works on this host")
                .hasMessageContaining("bwrap is not on the PATH")
                .hasMessageContaining("unshare is not on the PATH")
                .hasMessageContaining("apt-get install bubblewrap");
        // the state directory was released: a runtime can use it now
        new LocalRuntime(state, LocalIsolation.REQUIRED).close();
    }

    @Test
    void requiredWithToolsIsolates() {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.REQUIRED)) {
            assertThat(runtime.isolation().level()).isEqualTo("bubblewrap");
            assertThat(runtime.isolation().isolated()).isTrue();
        }
    }

    @Test
    void autoWithoutToolsRunsPlainProcessesAndSaysSo(@TempDir Path empty) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO, empty.toString())) {
            assertThat(runtime.isolation().level()).isEqualTo("none");
            assertThat(runtime.isolation().isolated()).isFalse();
            assertThat(runtime.isolation().detail()).startsWith("NO ISOLATION").contains("bwrap is not on the PATH");
            RuntimeSandbox sb = runtime.start(spec());
            assertThat(sh(sb, "echo plain").ok().out()).isEqualTo("plain\n");
        }
    }

    @Test
    void noneRunsPlainHostProcesses(@TempDir Path hostDir) throws Exception {
        Files.writeString(hostDir.resolve("visible"), "host file\n");
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.NONE)) {
            assertThat(runtime.isolation().level()).isEqualTo("none");
            assertThat(runtime.isolation().isolated()).isFalse();
            assertThat(runtime.isolation().detail()).contains("isolation is set to none");
            LocalSandbox sb = (LocalSandbox) runtime.start(
                    spec(Map.of("FROM_SANDBOX", "1"), ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits.NONE));

            RuntimeProcess p = sb.exec(sh("echo $$; pwd; cat " + hostDir.resolve("visible") + "; env; exec cat"));
            var out = LocalTesting.drain(p.stdout());
            p.stdin().close();
            assertThat(p.onExit().get(10, TimeUnit.SECONDS)).isEqualTo(ExitStatus.exited(0));
            List<String> lines = out.get().lines().toList();
            assertThat(Long.parseLong(lines.get(0))).isEqualTo(p.pid());
            assertThat(lines.get(1)).isEqualTo(sb.layer().resolve("workspace").toString());
            assertThat(lines.get(2)).isEqualTo("host file");
            assertThat(lines).contains("FROM_SANDBOX=1").noneMatch(l -> l.startsWith("JAVA_HOME="));
            assertThat(sh(sb, "test -d /proc/" + ProcessHandle.current().pid() + " && echo sees-host")
                            .out())
                    .isEqualTo("sees-host\n");

            RuntimeProcess tree = sb.exec(sh("(setsid sleep 4731 &); sleep 4731"));
            Awaitility.await()
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> LocalTesting.hostProcessesRunning("sleep 4731").size() == 2);
            tree.killTree();
            assertThat(LocalTesting.hostProcessesRunning("sleep 4731")).isEmpty();

            RuntimeProcess term = sb.exec(command("sleep", "4732"));
            term.signal(15);
            assertThat(term.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));

            assertThatThrownBy(() -> sb.exec(command("no-such-command-anywhere")))
                    .isInstanceOf(ProcessStartException.class)
                    .hasMessage("command not found in sandbox: no-such-command-anywhere");

            sh(sb, "setsid sleep 4733 > /dev/null 2>&1 < /dev/null &").ok();
            sb.terminate(Duration.ofSeconds(1));
            assertThat(LocalTesting.hostProcessesRunning("sleep 4733")).isEmpty();
            assertThat(Files.exists(sb.layer(), LinkOption.NOFOLLOW_LINKS)).isFalse();
        }
    }

    @Test
    void aStateDirectoryServesOneRuntimeAtATime() {
        try (LocalRuntime first = new LocalRuntime(state, LocalIsolation.AUTO)) {
            assertThatThrownBy(() -> new LocalRuntime(state, LocalIsolation.AUTO))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("in use by another local runtime");
            assertThat(first.name()).isEqualTo("local");
        }
        new LocalRuntime(state, LocalIsolation.AUTO).close();
    }

    @Test
    void duplicateIdsAndBadSpecsAreStartErrors() throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO)) {
            var spec = spec();
            runtime.start(spec);
            assertThatThrownBy(() -> runtime.start(spec))
                    .isInstanceOf(ai.chalk.compute.server.runtime.RuntimeStartException.class)
                    .hasMessageContaining("already running");
            var roWorkdir = new ai.chalk.compute.server.runtime.SandboxSpec(
                    LocalTesting.newId(),
                    "",
                    Map.of(),
                    "/usr/new-dir",
                    ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits.NONE,
                    false,
                    List.of());
            assertThatThrownBy(() -> runtime.start(roWorkdir))
                    .isInstanceOf(ai.chalk.compute.server.runtime.RuntimeStartException.class)
                    .hasMessageContaining("/usr/new-dir");
            assertThat(state.resolve("sandboxes").resolve(roWorkdir.id())).doesNotExist();
            var badEntrypoint = new ai.chalk.compute.server.runtime.SandboxSpec(
                    LocalTesting.newId(),
                    "",
                    Map.of(),
                    "/",
                    ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits.NONE,
                    false,
                    List.of("nope-cmd"));
            assertThatThrownBy(() -> runtime.start(badEntrypoint))
                    .isInstanceOf(ai.chalk.compute.server.runtime.RuntimeStartException.class)
                    .hasMessageContaining("command not found in sandbox: nope-cmd");
            assertThat(state.resolve("sandboxes").resolve(badEntrypoint.id())).doesNotExist();
        }
    }
}
