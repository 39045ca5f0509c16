package ai.chalk.compute.server.runtime.docker;

import static ai.chalk.compute.server.runtime.RuntimeTesting.command;
import static ai.chalk.compute.server.runtime.RuntimeTesting.readLine;
import static ai.chalk.compute.server.runtime.RuntimeTesting.sh;
import static ai.chalk.compute.server.runtime.RuntimeTesting.spec;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxOperationException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Suspend and resume as pause and unpause; snapshots from the engine's diff and export; seeding from a snapshot. */
@Tag("alone")
class DockerSuspendAndSnapshotTest extends DockerTesting.WithRuntime {

    @Test
    void suspendPausesEverythingUntilResume() throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(spec());
        RuntimeProcess ticker = sb.exec(sh("i=0; while :; do i=$((i+1)); echo $i; sleep 0.02; done"));
        assertThat(readLine(ticker.stdout())).isEqualTo("1");
        sb.suspend();
        sb.suspend(); // idempotent
        assertThat(DockerTesting.docker("inspect", "--format", "{{.State.Paused}}", sb.containerId())
                        .output()
                        .trim())
                .isEqualTo("true");
        assertThat(sb.paused()).isTrue();
        drainAvailable(ticker);
        Thread.sleep(300);
        assertThat(ticker.stdout().available()).as("output while suspended").isZero();
        assertThatThrownBy(() -> sb.exec(command("true")))
                .isInstanceOf(ProcessStartException.class)
                .hasMessageContaining("suspended");
        ticker.signal(15); // takes effect on resume
        sb.resume();
        sb.resume(); // idempotent
        assertThat(ticker.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));
        assertThat(RuntimeTesting.sh(sb, "echo running").ok().out()).isEqualTo("running\n");
    }

    @Test
    void aContainerPausedOrUnpausedByAnotherClientIsSuspendedAndResumedAlike() throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(spec());
        // the engine's state moved under the lifecycle's feet (docker pause by someone else): a 409 before
        assertThat(DockerTesting.docker("pause", sb.containerId()).code()).isZero();
        sb.suspend();
        assertThat(sb.paused()).isTrue();
        assertThat(DockerTesting.docker("unpause", sb.containerId()).code()).isZero();
        sb.resume();
        assertThat(RuntimeTesting.sh(sb, "echo running").ok().out()).isEqualTo("running\n");
        sb.terminate(Duration.ofSeconds(1));
    }

    @Test
    void aSuspendedSandboxCanBeTerminated() throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(spec());
        RuntimeProcess p = sb.exec(command("sleep", "4731"));
        sb.suspend();
        sb.terminate(Duration.ofSeconds(1));
        assertThat(p.onExit().get(5, TimeUnit.SECONDS)).isEqualTo(ExitStatus.signalled(15));
        assertThat(sb.onStopped()).isCompletedWithValue("terminated");
        assertThatThrownBy(sb::suspend)
                .isInstanceOf(SandboxOperationException.class)
                .hasMessageContaining("stopped");
    }

    /**
     * A copy stops when asked (the server asks whether the disk still has its reserve as the copy goes on): it fails,
     * nothing of it stays, and the sandbox runs on.
     */
    @Test
    void aSnapshotCopyStopsWhenAskedAndLeavesNothing(@TempDir Path snapshots) throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(spec());
        RuntimeTesting.sh(sb, "head -c 67108864 /dev/zero > /workspace/big").ok();
        Path snap = snapshots.resolve("s1");
        assertThatThrownBy(() -> sb.snapshot(snap, () -> true))
                .isInstanceOf(java.io.IOException.class)
                .hasMessageContaining("was stopped");
        assertThat(Files.exists(snap, LinkOption.NOFOLLOW_LINKS)).isFalse();
        assertThat(Files.exists(snapshots.resolve("s1.partial"), LinkOption.NOFOLLOW_LINKS))
                .isFalse();
        assertThat(sb.paused()).isFalse();
        assertThat(RuntimeTesting.sh(sb, "echo running").ok().out()).isEqualTo("running\n");
    }

    @Test
    void aSnapshotHoldsWhatTheSandboxChangedAndSeedsANewOne(@TempDir Path snapshots) throws Exception {
        DockerSandbox sb = (DockerSandbox) runtime.start(spec());
        RuntimeTesting.sh(
                        sb,
                        String.join(
                                " && ",
                                "mkdir -p /workspace/project/src",
                                "echo 'print(1)' > /workspace/project/src/main.py",
                                "chmod 750 /workspace/project/src/main.py",
                                "chown 1000:1000 /workspace/project/src/main.py",
                                "ln -s src/main.py /workspace/project/link",
                                "ln /workspace/project/src/main.py /workspace/project/hard",
                                "echo extra >> /etc/passwd",
                                "rm /bin/vi"))
                .ok();
        RuntimeProcess busy = sb.exec(sh("while :; do date > /tmp/clock; sleep 0.01; done"));
        Path snap = snapshots.resolve("s1");
        RuntimeSandbox.SnapshotResult result = sb.snapshot(snap);
        assertThat(result.frozen()).isTrue();
        assertThat(result.note()).contains("1 file(s) the sandbox deleted");
        assertThat(sb.paused()).as("paused after the snapshot").isFalse();
        Path main = snap.resolve("workspace/project/src/main.py");
        assertThat(main).hasContent("print(1)");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(main, LinkOption.NOFOLLOW_LINKS)))
                .isEqualTo("rwxr-x---");
        assertThat(Files.getAttribute(main, "unix:uid", LinkOption.NOFOLLOW_LINKS))
                .isEqualTo(1000);
        assertThat(Files.readSymbolicLink(snap.resolve("workspace/project/link")))
                .isEqualTo(Path.of("src/main.py"));
        assertThat(Files.getAttribute(main, "unix:nlink", LinkOption.NOFOLLOW_LINKS))
                .isEqualTo(2);
        assertThat(snap.resolve("etc/passwd")).content().endsWith("extra\n");
        assertThat(snap.resolve("etc/hostname")).doesNotExist();
        assertThat(snap.resolve("bin/sh")).doesNotExist(); // (bin itself changed: a file was deleted from it)
        assertThat(snap.resolve("tmp/clock")).exists();
        assertThat(Files.exists(snapshots.resolve("s1.partial"))).isFalse();
        assertThatThrownBy(() -> sb.snapshot(snap)).isInstanceOf(java.nio.file.FileAlreadyExistsException.class);
        busy.killTree();

        // a suspended sandbox stays suspended across a snapshot
        sb.suspend();
        sb.snapshot(snapshots.resolve("s2"));
        assertThat(sb.paused()).isTrue();
        sb.resume();

        SandboxSpec seeded = new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(),
                Optional.of(snap));
        RuntimeSandbox restored = runtime.start(seeded);
        assertThat(RuntimeTesting.sh(
                                restored,
                                "cat /workspace/project/link; stat -c '%a %u:%g %h' "
                                        + "/workspace/project/src/main.py; tail -1 /etc/passwd; cat /etc/hostname")
                        .ok()
                        .out())
                .isEqualTo("print(1)\n750 1000:1000 2\nextra\n" + SandboxHostname.of(seeded.id()) + "\n");
        // what the snapshot cannot say: the deleted file is back
        assertThat(RuntimeTesting.sh(restored, "test -e /bin/vi && echo back").out())
                .isEqualTo("back\n");
    }

    private static void drainAvailable(RuntimeProcess p) throws Exception {
        Thread.sleep(100); // output written just before the pause
        while (p.stdout().available() > 0) {
            p.stdout().read(new byte[p.stdout().available()]);
        }
    }
}
