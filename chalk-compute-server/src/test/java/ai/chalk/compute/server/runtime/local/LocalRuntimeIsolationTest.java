package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.run;
import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupFiles;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a bubblewrap sandbox can and cannot see or do, checked from inside with real processes. */
@Tag("alone")
class LocalRuntimeIsolationTest {

    @TempDir
    Path state;

    LocalRuntime runtime;

    @BeforeEach
    void start() {
        runtime = new LocalRuntime(state, LocalIsolation.AUTO);
    }

    @AfterEach
    void stop() {
        runtime.close();
    }

    @Test
    void bubblewrapAndAllCgroupControllersAreInForce() {
        Isolation iso = runtime.isolation();
        assertThat(iso.level()).isEqualTo("bubblewrap");
        assertThat(iso.isolated()).isTrue();
        assertThat(iso.detail())
                .contains("pid, mount, network (loopback only), ipc and uts namespaces")
                .contains("cgroup v1 controllers cpu, memory, pids in use");
    }

    @Test
    void etcIsMaskedAsItIsWhenEachSandboxStarts() throws Exception {
        Path secret = Path.of(
                "/etc/chalk-compute-late-secret-" + ProcessHandle.current().pid());
        try {
            Files.writeString(secret, "made root-only after the runtime started");
            Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            RuntimeSandbox sb = runtime.start(spec());
            assertThat(sh(sb, "cat " + secret + " | wc -c").ok().out()).isEqualTo("0\n");
            Files.delete(secret);
            // a mask whose file is gone no longer stops sandboxes from starting
            RuntimeSandbox next = runtime.start(spec());
            assertThat(sh(next, "test -e " + secret + " || echo gone").ok().out())
                    .isEqualTo("gone\n");
        } finally {
            Files.deleteIfExists(secret);
        }
    }

    @Test
    void aFileUnderEtcMadeRootOnlyBetweenTwoCreatesIsMaskedInTheSecond() throws Exception {
        // the masks are walked again only when /etc reports a change: a mode change of a file that was there, in a
        // directory made after the runtime started, must be one. The mount table says what is masked: with a user
        // namespace of its own, a sandbox's root is no longer the files' owner, so reading them fails either way
        Path dir =
                Path.of("/etc/chalk-compute-late-dir-" + ProcessHandle.current().pid());
        Path secret = dir.resolve("secret");
        String masks = "grep -c " + dir + " /proc/self/mountinfo";
        try {
            runtime.start(spec()); // the masks as they were
            Files.createDirectory(dir);
            Files.writeString(secret, "readable for now");
            RuntimeSandbox before = runtime.start(spec());
            assertThat(sh(before, "cat " + secret).ok().out()).isEqualTo("readable for now");
            assertThat(sh(before, masks).out()).isEqualTo("0\n");
            Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            RuntimeSandbox after = runtime.start(spec());
            assertThat(sh(after, "cat " + secret + " | wc -c").ok().out()).isEqualTo("0\n");
            assertThat(sh(after, "grep -c ' " + secret + " ' /proc/self/mountinfo")
                            .out())
                    .isEqualTo("1\n");
            Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
            Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            RuntimeSandbox masked = runtime.start(spec());
            assertThat(sh(masked, "ls -A " + dir + " | wc -l").ok().out()).isEqualTo("0\n");
            assertThat(sh(masked, "grep -c ' " + dir + " ' /proc/self/mountinfo")
                            .out())
                    .isEqualTo("1\n");
        } finally {
            Files.deleteIfExists(secret);
            Files.deleteIfExists(dir);
        }
    }

    @Test
    void seesOnlyItsOwnProcesses() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        String ps = sh(sb, "ps -eo pid=,args=").ok().out();
        List<Long> pids = ps.lines()
                .map(String::trim)
                .map(l -> Long.parseLong(l.split("\\s+", 2)[0]))
                .toList();
        assertThat(pids)
                .contains(1L)
                .allMatch(p -> p < 100)
                .doesNotContain(ProcessHandle.current().pid());
        assertThat(ps).doesNotContain("java").doesNotContain(state.toString());
        String proc = sh(sb, "ls /proc | grep -E '^[0-9]+$'").ok().out();
        assertThat(proc.lines().map(Long::parseLong)).allMatch(p -> p < 100);
        assertThat(sh(sb, "test -e /proc/" + ProcessHandle.current().pid() + "/status && echo visible || echo gone")
                        .out())
                .isEqualTo("gone\n");
    }

    @Test
    void hostDirectoriesAndServerDataAreNotVisible(@TempDir Path hostDir) throws Exception {
        Files.writeString(hostDir.resolve("secret"), "host secret");
        RuntimeSandbox sb = runtime.start(spec());
        LocalTesting.Run r = sh(
                sb,
                String.join(
                        "; ",
                        "for d in /home /work /opt /var/lib /srv /mnt " + state + " " + hostDir
                                + "; do test -e $d && echo \"visible $d\"; done",
                        "cat " + hostDir.resolve("secret"),
                        "ls -A /root /tmp",
                        "cat /etc/shadow /etc/gshadow",
                        "true"));
        assertThat(r.out())
                .doesNotContain("visible")
                .doesNotContain("host secret")
                .doesNotContain("root:x:0");
        assertThat(r.status().exitCode()).hasValue(0);
        // /root and /tmp are the sandbox's own, empty directories, not the host's
        assertThat(sh(sb, "ls -A /root /tmp | grep -v ':$' | grep -v '^$' || true")
                        .out())
                .isEmpty();
        assertThat(Files.list(Path.of("/tmp")).findAny()).isPresent(); // (the host's /tmp is not empty)
        // the layer on the host is where the sandbox's files are, but the sandbox cannot name the state dir
        assertThat(((LocalSandbox) sb).layer()).startsWith(state);
    }

    @Test
    void systemDirectoriesAreReadOnlyAndCapabilitiesAreGone() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        for (String attempt : List.of(
                "touch /usr/x",
                "touch /etc/x",
                "mkdir /usr/lib/x",
                "rm -f /bin/sh",
                "mount -t tmpfs none /tmp",
                "mount -o remount,rw /usr",
                "unshare -m true",
                "unshare -n true",
                "chroot / true",
                "mknod /tmp/mem c 1 1",
                "hostname other",
                "ip link add dummy0 type dummy",
                "p=$(cat /proc/sys/kernel/core_pattern); echo \"$p\" > /proc/sys/kernel/core_pattern",
                "echo 1 > /proc/sys/vm/drop_caches",
                "echo > /proc/sysrq-trigger")) {
            LocalTesting.Run r = sh(sb, attempt + " 2>&1 && echo SUCCEEDED");
            assertThat(r.out()).as(attempt).doesNotContain("SUCCEEDED");
        }
        String status = sh(sb, "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status")
                .ok()
                .out();
        assertThat(status)
                .contains("CapEff:\t0000000000000000")
                .contains("CapPrm:\t0000000000000000")
                .contains("CapBnd:\t0000000000000000")
                .contains("NoNewPrivs:\t1");
        // its init cannot be killed from inside
        sh(sb, "kill -9 1; kill -KILL -1");
        assertThat(sh(sb, "echo alive").ok().out()).isEqualTo("alive\n");
    }

    @Test
    void networkIsLoopbackOnly() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        String devs = sh(sb, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
                .ok()
                .out();
        assertThat(devs.lines()).containsExactly("lo");
        String links = sh(sb, "ip -o link show").ok().out();
        assertThat(links.lines()).hasSize(1).allMatch(l -> l.contains(": lo:") && l.contains("UP"));
        assertThat(sh(sb, "hostname").ok().out().trim()).isEqualTo(SandboxHostname.of(((LocalSandbox) sb).id()));
    }

    @Test
    void terminateNeverFollowsLinksOutOfTheLayer(@TempDir Path hostDir) throws Exception {
        Path canary = Files.writeString(hostDir.resolve("canary"), "keep me");
        RuntimeSandbox sb = runtime.start(spec());
        sh(
                        sb,
                        "ln -s / /workspace/root-link && ln -s " + hostDir + " /workspace/host-link && ln -s " + canary
                                + " /tmp/canary-link && mkdir -p /workspace/d && ln -s /usr /workspace/d/usr")
                .ok();
        Path layer = ((LocalSandbox) sb).layer();
        assertThat(Files.isSymbolicLink(layer.resolve("workspace/host-link"))).isTrue();
        sb.terminate(Duration.ZERO);
        assertThat(canary).hasContent("keep me");
        assertThat(Path.of("/usr/bin/sh")).exists();
        assertThat(Files.exists(layer, LinkOption.NOFOLLOW_LINKS)).isFalse();
    }

    @Test
    void aDaemonStartedByOneExecIsSeenByTheNext() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        sh(sb, "setsid sleep 4701 > /dev/null 2>&1 < /dev/null &").ok();
        sh(sb, "tmux new-session -d -s work 'sleep 4702'").ok();
        String ps = sh(sb, "ps -eo args").ok().out();
        assertThat(ps).contains("sleep 4701").contains("sleep 4702");
        assertThat(sh(sb, "tmux ls").ok().out()).startsWith("work:");
        sb.terminate(Duration.ofSeconds(1));
        assertThat(LocalTesting.hostProcessesRunning("sleep 4701")).isEmpty();
        assertThat(LocalTesting.hostProcessesRunning("sleep 4702")).isEmpty();
    }

    @Test
    void terminateSendsTermThenKillsWhatIgnoresIt() throws Exception {
        RuntimeSandbox sb = runtime.start(spec());
        sh(
                        sb,
                        "setsid sh -c 'trap \"echo bye > /workspace/termed; exit 0\" TERM; while :; do sleep 0.05; done' "
                                + "> /dev/null 2>&1 < /dev/null &")
                .ok();
        sh(sb, "setsid sh -c 'trap \"\" TERM; exec sleep 4703' > /dev/null 2>&1 < /dev/null &")
                .ok();
        // both traps are set once their processes run what follows the trap
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> LocalTesting.hostProcessesRunning("sleep 4703").size() == 1
                        && LocalTesting.hostProcessesRunning("sleep 0.05").size() == 1);
        Path layer = ((LocalSandbox) sb).layer();
        long started = System.nanoTime();
        // the layer is deleted at the end of terminate: watch for the trap's file while terminate runs
        java.util.concurrent.atomic.AtomicBoolean termed = new java.util.concurrent.atomic.AtomicBoolean();
        Thread watcher = new Thread(() -> {
            while (!termed.get() && System.nanoTime() - started < 5e9) {
                termed.set(Files.exists(layer.resolve("workspace/termed")));
                Thread.onSpinWait();
            }
        });
        watcher.start();
        sb.terminate(Duration.ofMillis(700));
        watcher.join();
        assertThat(termed).isTrue();
        long tookMillis = (System.nanoTime() - started) / 1_000_000;
        assertThat(tookMillis).isGreaterThanOrEqualTo(600).isLessThan(5_000);
        assertThat(LocalTesting.hostProcessesRunning("sleep 4703")).isEmpty();
        assertThat(sb.onStopped()).isCompletedWithValue("terminated");
    }

    @Test
    void aSandboxWhoseInitDiesStopsAndCleansUp() throws Exception {
        LocalSandbox sb = (LocalSandbox) runtime.start(spec());
        // nothing inside can end the init (see systemDirectoriesAreReadOnly...), so it crashes from outside
        sh(sb, "kill -TERM 2; kill -KILL -1");
        assertThat(sh(sb, "echo alive").ok().out()).isEqualTo("alive\n");
        HostSignals.signal(sb.initPid(), 9);
        assertThat(sb.onStopped().get(10, java.util.concurrent.TimeUnit.SECONDS))
                .isEqualTo("the sandbox's init was killed by signal 9");
        assertThat(Files.exists(sb.layer(), LinkOption.NOFOLLOW_LINKS)).isFalse();
        assertThat(sb.groups().orElseThrow().dir("pids").orElseThrow()).doesNotExist();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> sb.exec(LocalTesting.command("true")))
                .isInstanceOf(ai.chalk.compute.server.runtime.ProcessStartException.class)
                .hasMessageContaining("not running");
    }

    @Test
    void cgroupsAreCreatedWithLimitsAndRemovedOnTerminate() throws Exception {
        SandboxSpec spec = spec(
                Map.of(), new ResourceLimits(java.util.Optional.of(500L), java.util.Optional.of(64L * 1024 * 1024)));
        LocalSandbox sb = (LocalSandbox) runtime.start(spec);
        SandboxCgroup groups = sb.groups().orElseThrow();
        Path memory = groups.dir("memory").orElseThrow();
        Path cpu = groups.dir("cpu").orElseThrow();
        Path pids = groups.dir("pids").orElseThrow();
        assertThat(read(memory.resolve("memory.limit_in_bytes"))).isEqualTo(Long.toString(64L * 1024 * 1024));
        assertThat(read(cpu.resolve("cpu.cfs_quota_us"))).isEqualTo("50000");
        assertThat(read(cpu.resolve("cpu.cfs_period_us"))).isEqualTo("100000");
        assertThat(read(pids.resolve("pids.max"))).isEqualTo(Long.toString(SandboxDefaults.STANDARD.pidsMax()));
        // the limit is not visible inside (no /sys), but every process of the sandbox is in the group
        LocalProcess p = (LocalProcess) sb.exec(LocalTesting.command("sleep", "4704"));
        long host = p.hostPid();
        String cgroup = Files.readString(Path.of("/proc", Long.toString(host), "cgroup"));
        String id = sb.id();
        assertThat(cgroup.lines().filter(l -> l.contains(":memory:") || l.contains(":cpu:") || l.contains(":pids:")))
                .hasSize(3)
                .allMatch(l -> l.contains("/chalk-compute/") && l.contains("/" + id));
        assertThat(Set.copyOf(CgroupFiles.procs(memory, true))).contains(host, sb.initPid());
        // and the limit holds: a shell that needs 100 MB is killed by the kernel
        LocalTesting.Run hog = sh(sb, "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived");
        assertThat(hog.out()).doesNotContain("survived");
        assertThat(hog.status().exitCode()).hasValue(137);
        assertThat(read(memory.resolve("memory.oom_control"))).containsPattern("oom_kill [1-9]");
        sb.terminate(Duration.ZERO);
        assertThat(memory).doesNotExist();
        assertThat(cpu).doesNotExist();
        assertThat(pids).doesNotExist();
    }

    @Test
    void reconcileAdoptsNothingAndRemovesLeftovers() throws Exception {
        LocalSandbox running = (LocalSandbox) runtime.start(spec());
        // leftovers of a sandbox from an earlier server: a layer and cgroups with a process in them
        Path layer = state.resolve("sandboxes/gone-1/root");
        Files.createDirectories(layer.resolve("workspace"));
        Files.createSymbolicLink(layer.resolve("workspace/link"), Path.of("/"));
        SandboxCgroup old = runtime.cgroups().create("gone-1", ResourceLimits.NONE, 10);
        Process stray = new ProcessBuilder(
                        "/bin/sh", "-c", "echo $$ > " + old.initProcsFiles().get(2) + " && exec sleep 4705")
                .start();
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() ->
                        CgroupFiles.procs(old.dir("pids").orElseThrow(), true).contains(stray.pid()));

        assertThat(runtime.reconcile(List.of("gone-1", running.id()))).isEmpty();

        assertThat(state.resolve("sandboxes/gone-1")).doesNotExist();
        assertThat(old.dir("pids").orElseThrow()).doesNotExist();
        assertThat(old.dir("memory").orElseThrow()).doesNotExist();
        assertThat(stray.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        // the running sandbox was left alone
        assertThat(sh(running, "echo ok").ok().out()).isEqualTo("ok\n");
    }

    @Test
    void networkTrueGivesTheSandboxItsOwnNamespaceWithAWayOut() throws Exception {
        SandboxSpec spec =
                new SandboxSpec(LocalTesting.newId(), "", Map.of(), "/", ResourceLimits.NONE, true, List.of());
        RuntimeSandbox sb = runtime.start(spec);
        String devs = sh(sb, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
                .ok()
                .out();
        // never the host's interfaces: loopback, and slirp4netns' tap device whose far end is the server's
        assertThat(Set.copyOf(devs.lines().toList())).isEqualTo(Set.of("lo", "tap0"));
        assertThat(sh(sb, "grep -c . /proc/net/route").ok().out().trim()).isNotEqualTo("1");
        assertThat(sh(sb, "pwd").ok().out()).isEqualTo("/\n");
    }

    @Test
    void anEntrypointStartsWithTheSandbox() throws Exception {
        SandboxSpec spec = new SandboxSpec(
                LocalTesting.newId(),
                "",
                Map.of("GREETING", "hi"),
                "/srv/app",
                ResourceLimits.NONE,
                false,
                List.of("sh", "-c", "echo $GREETING > /tmp/started; exec sleep 4706"));
        RuntimeSandbox sb = runtime.start(spec);
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .untilAsserted(
                        () -> assertThat(sh(sb, "cat /tmp/started; ps -eo args").out())
                                .startsWith("hi\n")
                                .contains("sleep 4706"));
        assertThat(run(sb, LocalTesting.command("pwd")).ok().out()).isEqualTo("/srv/app\n");
    }

    private static String read(Path file) throws java.io.IOException {
        return Files.readString(file).trim();
    }
}
