package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Finding 15 as an attack: a sandbox plants a setuid-root copy of coreutils' {@code id} (busybox would drop the
 * privilege by itself) in a volume; in every later container that
 * mounts the volume it must stay an ordinary program (the volume is mounted {@code nosuid,nodev}).
 */
@Tag("alone")
class DockerVolumeSecurityTest extends DockerTesting.WithRuntime {

    private RuntimeSandbox withVolume(Path volume, String mountPath, boolean readOnly) throws Exception {
        return runtime.start(new SandboxSpec(
                RuntimeTesting.newId(),
                DockerTesting.debianImage(),
                Map.of(),
                "/",
                ResourceLimits.NONE,
                false,
                List.of(),
                List.of(new SandboxSpec.VolumeBinding(volume, mountPath, readOnly))));
    }

    private static String mountOptions(RuntimeSandbox sb, String mountPath) throws Exception {
        return RuntimeTesting.sh(sb, "awk '$5 == \"" + mountPath + "\" {print $6}' /proc/self/mountinfo")
                .ok()
                .out()
                .strip();
    }

    @Test
    void aSetuidFilePlantedInAVolumeNeverElevates(@TempDir Path volume) throws Exception {
        Files.setPosixFilePermissions(volume, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        RuntimeSandbox planter = withVolume(volume, "/data", false);
        assertThat(mountOptions(planter, "/data"))
                .contains("nosuid")
                .contains("nodev")
                .startsWith("rw");
        RuntimeTesting.sh(planter, "cp /usr/bin/id /data/id && chmod 4755 /data/id")
                .ok();
        planter.terminate(Duration.ZERO);
        // the bit is really there, on the volume
        assertThat(DockerTesting.run(List.of(
                                "stat", "-c", "%a %u", volume.resolve("id").toString()))
                        .output()
                        .strip())
                .isEqualTo("4755 0");

        for (boolean readOnly : List.of(false, true)) {
            DockerSandbox victim = (DockerSandbox) withVolume(volume, "/mnt/v", readOnly);
            String options = mountOptions(victim, "/mnt/v");
            assertThat(options)
                    .as("read-only %s", readOnly)
                    .contains("nosuid")
                    .contains("nodev")
                    .startsWith(readOnly ? "ro" : "rw");
            DockerTesting.Result asNobody =
                    DockerTesting.docker("exec", "-u", "65534:65534", victim.containerId(), "/mnt/v/id", "-u");
            assertThat(asNobody.output().strip())
                    .as("a setuid-root program run by nobody")
                    .isEqualTo("65534");
            // even a container without no-new-privileges, binding what the sandbox binds, gets no root from it
            Path staged = state.resolve("volumes").resolve(victim.id()).resolve("0");
            DockerTesting.Result plain = DockerTesting.docker(
                    "run",
                    "--rm",
                    "-u",
                    "65534:65534",
                    "-v",
                    staged + ":/v",
                    DockerTesting.debianImage(),
                    "/v/id",
                    "-u");
            assertThat(plain.output().strip()).isEqualTo("65534");
            if (readOnly) {
                assertThat(RuntimeTesting.sh(victim, "touch /mnt/v/x 2>&1 || echo refused")
                                .out())
                        .contains("refused");
            }
            victim.terminate(Duration.ZERO);
        }
        // the control: bound as the engine binds by default, the same file makes nobody root
        DockerTesting.Result unstaged = DockerTesting.docker(
                "run", "--rm", "-u", "65534:65534", "-v", volume + ":/v", DockerTesting.debianImage(), "/v/id", "-u");
        assertThat(unstaged.output().strip()).isEqualTo("0");
        // nothing is left mounted on this host once the sandboxes are gone
        String mounts = Files.readString(Path.of("/proc/self/mountinfo"));
        assertThat(mounts).doesNotContain(state.resolve("volumes").toString());
    }

    @Test
    void stagedVolumesOfACrashedServerAreUnmountedAtReconcile(@TempDir Path volume) throws Exception {
        RuntimeSandbox kept = withVolume(volume, "/data", false);
        RuntimeSandbox dropped = withVolume(volume, "/data", false);
        runtime.abandon(); // a crash: containers and their staged mounts stay
        String before = Files.readString(Path.of("/proc/self/mountinfo"));
        assertThat(before)
                .contains(state.resolve("volumes").resolve(dropped.id()).toString());
        runtime = DockerTesting.runtime(state);
        RuntimeSandbox again = runtime.reconcile(List.of(kept.id())).iterator().next();
        String after = Files.readString(Path.of("/proc/self/mountinfo"));
        assertThat(after)
                .doesNotContain(state.resolve("volumes").resolve(dropped.id()).toString())
                .contains(state.resolve("volumes").resolve(kept.id()).toString());
        RuntimeTesting.sh(again, "echo still > /data/kept").ok();
        assertThat(volume.resolve("kept")).hasContent("still");
        again.terminate(Duration.ZERO);
        assertThat(Files.readString(Path.of("/proc/self/mountinfo")))
                .doesNotContain(state.resolve("volumes").toString());
    }
}
