package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static ai.chalk.compute.server.runtime.local.LocalTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxOperationException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Suspend, resume and snapshots of local sandboxes: the freezer, the copy, and seeding a layer from a copy. */
class LocalRuntimeSuspendSnapshotTest {

    @TempDir
    Path state;

    private static String freezerState(LocalSandbox sb) throws Exception {
        return Files.readString(
                        sb.groups().orElseThrow().dir("freezer").orElseThrow().resolve("freezer.state"))
                .trim();
    }

    @Test
    void suspendFreezesEveryProcessAndResumeLetsThemContinue() throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO)) {
            assertThat(runtime.isolation().detail()).contains("the freezer suspends sandboxes");
            LocalSandbox sb = (LocalSandbox) runtime.start(spec());
            sh(sb, "setsid sh -c 'while :; do echo x >> /workspace/t; sleep 0.02; done' > /dev/null 2>&1 < /dev/null &")
                    .ok();
            Path t = sb.layer().resolve("workspace/t");
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.exists(t) && Files.size(t) > 10);

            sb.suspend();
            assertThat(freezerState(sb)).isEqualTo("FROZEN");
            assertThat(sb.frozen()).isTrue();
            long size = Files.size(t);
            // a process started meanwhile freezes as it enters the sandbox
            RuntimeProcess late = sb.exec(LocalTesting.command("/bin/echo", "late"));
            late.stdin().close();
            assertThatThrownBy(() -> late.onExit().get(400, TimeUnit.MILLISECONDS))
                    .isInstanceOf(TimeoutException.class);
            assertThat(Files.size(t)).isEqualTo(size);
            sb.suspend(); // nothing more to do

            sb.resume();
            assertThat(freezerState(sb)).isEqualTo("THAWED");
            assertThat(LocalTesting.collect(late).ok().out()).isEqualTo("late\n");
            Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.size(t) > size + 10);

            // terminating a suspended sandbox does not wait for the grace period on frozen processes that cannot react
            sb.suspend();
            long start = System.nanoTime();
            sb.terminate(Duration.ofSeconds(3));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
            assertThat(Files.exists(sb.layer(), LinkOption.NOFOLLOW_LINKS)).isFalse();
            assertThatThrownBy(sb::suspend)
                    .isInstanceOf(SandboxOperationException.class)
                    .hasMessageContaining("stopped");
        }
    }

    @Test
    void withoutAFreezerSuspendSaysWhyAndSnapshotsSayTheyWereNotFrozen(@TempDir Path copy) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO, LocalRuntime.DEFAULT_PATH, false)) {
            assertThat(runtime.isolation().detail()).contains("sandboxes cannot be suspended");
            RuntimeSandbox sb = runtime.start(spec());
            assertThatThrownBy(sb::suspend)
                    .isInstanceOf(SandboxOperationException.class)
                    .hasMessageContaining("cgroup v1 freezer")
                    .hasMessageContaining("cgroups are switched off");
            sh(sb, "echo data > /workspace/f").ok();
            RuntimeSandbox.SnapshotResult result = sb.snapshot(copy.resolve("files"));
            assertThat(result.frozen()).isFalse();
            assertThat(result.note()).contains("copied while the sandbox's processes ran");
            assertThat(copy.resolve("files/workspace/f")).hasContent("data");
        }
    }

    /**
     * A copy stops when asked (the server asks whether the disk still has its reserve, every 100 ms of the copy): it
     * fails, nothing of it stays, and the sandbox runs on, thawed.
     */
    @Test
    void aSnapshotCopyStopsWhenAskedAndLeavesNothing(@TempDir Path snapshots) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO)) {
            LocalSandbox sb = (LocalSandbox) runtime.start(spec());
            sh(sb, "head -c 1073741824 /dev/zero > /workspace/big").ok();
            Path files = snapshots.resolve("s1");
            assertThatThrownBy(() -> sb.snapshot(files, () -> true))
                    .isInstanceOf(java.io.IOException.class)
                    .hasMessageContaining("was stopped");
            assertThat(Files.exists(files, LinkOption.NOFOLLOW_LINKS)).isFalse();
            assertThat(Files.exists(snapshots.resolve("s1.partial"), LinkOption.NOFOLLOW_LINKS))
                    .isFalse();
            assertThat(sh(sb, "echo running").ok().out()).isEqualTo("running\n");
            sb.terminate(java.time.Duration.ZERO);
        }
    }

    @Test
    void aSnapshotIsAFrozenCopyOfTheLayerThatSeedsNewSandboxes(@TempDir Path snapshots) throws Exception {
        try (LocalRuntime runtime = new LocalRuntime(state, LocalIsolation.AUTO)) {
            LocalSandbox sb = (LocalSandbox) runtime.start(spec());
            sh(sb, "cd /workspace && echo one > f && ln -s f l && mkdir d && chmod 0711 d && touch owned")
                    .ok();
            // (a sandbox cannot chown: it has no capabilities)
            Files.setAttribute(sb.layer().resolve("workspace/owned"), "unix:uid", 1234, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(sb.layer().resolve("workspace/owned"), "unix:gid", 5678, LinkOption.NOFOLLOW_LINKS);
            Path files = snapshots.resolve("s1");
            RuntimeSandbox.SnapshotResult result = sb.snapshot(files);
            assertThat(result.frozen()).isTrue();
            assertThat(result.note()).isEmpty();
            assertThat(freezerState(sb)).isEqualTo("THAWED");
            assertThat(Files.readSymbolicLink(files.resolve("workspace/l"))).isEqualTo(Path.of("f"));
            assertThat(Files.getAttribute(files.resolve("workspace/owned"), "unix:uid", LinkOption.NOFOLLOW_LINKS))
                    .isEqualTo(1234);
            assertThat(Files.exists(snapshots.resolve("s1.partial"), LinkOption.NOFOLLOW_LINKS))
                    .isFalse();
            assertThatThrownBy(() -> sb.snapshot(files)).isInstanceOf(java.nio.file.FileAlreadyExistsException.class);

            // a suspended sandbox stays suspended across a snapshot
            sb.suspend();
            sb.snapshot(snapshots.resolve("s2"));
            assertThat(freezerState(sb)).isEqualTo("FROZEN");
            sb.resume();

            RuntimeSandbox seeded = runtime.start(withFiles(spec(), files));
            assertThat(sh(seeded, "cd /workspace && cat l && stat -c '%a %u:%g' d f owned")
                            .ok()
                            .out())
                    .isEqualTo("one\n711 0:0\n644 0:0\n644 1234:5678\n");
            sh(seeded, "echo two > /workspace/f").ok();
            assertThat(files.resolve("workspace/f")).hasContent("one"); // the snapshot is only read
        }
    }

    /**
     * A snapshot holds what a sandbox wrote, and the runtime sets up a layer as root before the sandbox starts: a
     * symlink planted where it creates, mounts or chmods ({@code /tmp}, {@code /root}, the workdir)
     * must not turn that onto the host.
     */
    @Test
    void linksPlantedInASnapshotDoNotRedirectTheSetupOfANewSandbox(
            @TempDir Path tools, @TempDir Path snapshots, @TempDir Path victims) throws Exception {
        // host directories the planted links point to; the unshare level's setup would chmod them (1777 for /tmp,
        // 0700 for /root) and bubblewrap's would refuse to start, were the links kept
        Path victim = Files.createDirectory(
                victims.resolve("a"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path victim2 = Files.createDirectory(
                victims.resolve("b"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-x---")));
        for (String path : List.of(LocalRuntime.DEFAULT_PATH, LocalTesting.pathWithout(tools, "bwrap"))) {
            Path dir = state.resolve(path.equals(LocalRuntime.DEFAULT_PATH) ? "bwrap" : "unshare");
            try (LocalRuntime runtime = new LocalRuntime(dir, LocalIsolation.AUTO, path)) {
                LocalSandbox sb = (LocalSandbox) runtime.start(spec());
                sh(
                                sb,
                                "cd / && rm -rf /tmp /root /var/tmp && ln -s " + victim + " /tmp && ln -s " + victim2
                                        + " /root && mkdir -p /var && ln -s " + victim
                                        + " /var/tmp && mv /workspace /w0 && ln -s "
                                        + victim + " /workspace && ln -s " + victim + " /.chalk-old-root")
                        .ok();
                Path files = snapshots.resolve(runtime.isolation().level());
                sb.snapshot(files);
                RuntimeSandbox seeded = runtime.start(withFiles(spec(), files));
                assertThat(sh(seeded, "stat -c '%a %F' /tmp /var/tmp /root /workspace; pwd")
                                .ok()
                                .out())
                        .as(runtime.isolation().level())
                        .isEqualTo("""
                        1777 directory
                        1777 directory
                        700 directory
                        755 directory
                        /workspace
                        """);
                assertThat(Files.getPosixFilePermissions(victim))
                        .isEqualTo(PosixFilePermissions.fromString("rwx------"));
                assertThat(Files.getPosixFilePermissions(victim2))
                        .isEqualTo(PosixFilePermissions.fromString("rwxr-x---"));
                try (var a = Files.list(victim);
                        var b = Files.list(victim2)) {
                    assertThat(a).isEmpty();
                    assertThat(b).isEmpty();
                }
            }
        }
    }

    private static SandboxSpec withFiles(SandboxSpec spec, Path files) {
        return new SandboxSpec(
                spec.id(),
                spec.image(),
                Map.of(),
                spec.workdir(),
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(),
                Optional.of(files));
    }
}
