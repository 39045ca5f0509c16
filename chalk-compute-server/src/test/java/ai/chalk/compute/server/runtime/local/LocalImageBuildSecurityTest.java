package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.image.ImageBuilder;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A hostile image build step, with ids of its own and as on a kernel that cannot give it any (before 6.3): its root
 * is then the host's root with Docker's default capabilities (CHOWN, DAC_OVERRIDE, FOWNER, MKNOD ...), in a mount
 * namespace of its own. The device nodes it sees must be its own (bubblewrap's {@code --dev} binds the host's, and
 * such a step changed them), and its {@code /proc} a sandbox's.
 */
@Tag("alone")
class LocalImageBuildSecurityTest {

    @TempDir
    Path temp;

    private static final List<String> NODES = List.of("null", "zero", "full", "random", "urandom", "tty");
    private static final String ATTRIBUTES = "unix:mode,uid,gid,lastModifiedTime";

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aBuildStepChangesNoDeviceNodeOfTheHostAndOpensNoDeviceItMakes(boolean ownIds) throws Exception {
        Map<String, Map<String, Object>> before = new java.util.HashMap<>();
        for (String n : NODES) {
            before.put(n, Files.readAttributes(Path.of("/dev", n), ATTRIBUTES, LinkOption.NOFOLLOW_LINKS));
        }
        try (LocalRuntime runtime = runtime(ownIds)) {
            ImageSpec spec = ImageSpec.newBuilder()
                    .setBaseImage(LocalImageSandboxTest.BUSYBOX)
                    .addSteps(LocalImageBuilderTest.runStep(
                            "grep -E '^CapEff' /proc/self/status",
                            "for n in " + String.join(" ", NODES) + "; do chmod 000 /dev/$n; chown 1:1 /dev/$n;"
                                    + " touch -d 2001-01-01 /dev/$n; done 2>/dev/null; true",
                            "for d in /dev /tmp; do if mknod $d/disk b 8 0 2>/dev/null && head -c1 $d/disk"
                                    + " >/dev/null 2>&1; then echo DEVICE-OPENED $d; fi; done; echo devices-tried"))
                    .build();
            List<String> log = build(runtime, spec);
            assertThat(log).contains("CapEff:\t00000000a80405fb", "devices-tried");
            assertThat(log).noneMatch(l -> l.startsWith("DEVICE-OPENED"));
        } finally {
            // the host's nodes are put back before anything fails: every later test, and the host, needs them
            Map<String, Object> changed = new java.util.LinkedHashMap<>();
            for (String n : NODES) {
                Path node = Path.of("/dev", n);
                Map<String, Object> now = Files.readAttributes(node, ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
                if (!now.equals(before.get(n))) {
                    changed.put(n, now);
                    Map<String, Object> was = before.get(n);
                    Files.setAttribute(node, "unix:uid", was.get("uid"));
                    Files.setAttribute(node, "unix:gid", was.get("gid"));
                    Files.setAttribute(node, "unix:mode", (Integer) was.get("mode") & 07777);
                    Files.setLastModifiedTime(node, (FileTime) was.get("lastModifiedTime"));
                }
            }
            assertThat(changed).as("the host's device nodes the step changed").isEmpty();
        }
    }

    /**
     * A step's {@code /proc} is a sandbox's: what describes the whole host is masked ({@code keys}, {@code timer_list},
     * {@code acpi} ...) and the kernel's knobs are read-only, which is all that stands between a step whose root is the
     * host's root (with DAC_OVERRIDE) and the host's root-writable entries.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aBuildStepsProcShowsNothingOfTheHostAndChangesNothing(boolean ownIds) throws Exception {
        try (LocalRuntime runtime = runtime(ownIds)) {
            StringBuilder script = new StringBuilder();
            for (String f : runtime.procMasks().files()) {
                script.append("echo \"")
                        .append(f)
                        .append(" $(head -c 64 ")
                        .append(f)
                        .append(" 2>/dev/null | wc -c)\"; ");
            }
            for (String d : runtime.procMasks().dirs()) {
                script.append("echo \"").append(d).append(" $(ls -A ").append(d).append(" | wc -l)\"; ");
                script.append("touch ")
                        .append(d)
                        .append("/x 2>/dev/null && echo WROTE ")
                        .append(d)
                        .append("; ");
            }
            for (String knob : List.of("/proc/sys/kernel/hostname", "/proc/sysrq-trigger")) {
                script.append("{ echo h > ")
                        .append(knob)
                        .append("; } 2>/dev/null && echo WROTE ")
                        .append(knob)
                        .append("; ");
            }
            script.append("echo proc-tried");
            List<String> log = build(
                    runtime,
                    ImageSpec.newBuilder()
                            .setBaseImage(LocalImageSandboxTest.BUSYBOX)
                            .addSteps(LocalImageBuilderTest.runStep(script.toString()))
                            .build());
            assertThat(runtime.procMasks().files()).contains("/proc/keys", "/proc/timer_list");
            for (String f : runtime.procMasks().files()) {
                assertThat(log).as("masked file").contains(f + " 0");
            }
            for (String d : runtime.procMasks().dirs()) {
                assertThat(log).as("masked directory").contains(d + " 0");
            }
            assertThat(log).contains("proc-tried").noneMatch(l -> l.startsWith("WROTE"));
        }
    }

    /**
     * A step's {@code /dev} is a sandbox's, on a small file system of the step's: the standard entries, a
     * {@code /dev/shm} it can write, and no more room there than Docker gives a container's {@code shm} (bubblewrap's
     * {@code --dev} tmpfs had no size, and a step whose root is the host's root can write in {@code /dev} itself).
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aBuildStepsDevHasTheStandardEntriesAndIsBounded(boolean ownIds) throws Exception {
        try (LocalRuntime runtime = runtime(ownIds)) {
            List<String> log = build(
                    runtime,
                    ImageSpec.newBuilder()
                            .setBaseImage(LocalImageSandboxTest.BUSYBOX)
                            .addSteps(LocalImageBuilderTest.runStep(
                                    "echo entries $(ls -A /dev | tr '\\n' ' ')",
                                    "echo through-stdout > /dev/stdout; echo shm-ok > /dev/shm/f && cat /dev/shm/f",
                                    "head -c 100000000 /dev/zero > /dev/shm/big 2>/dev/null;"
                                            + " echo shm-bounded $(( $(wc -c < /dev/shm/big) <= " + (64 << 20) + " ))"))
                            .build());
            assertThat(log)
                    .contains(
                            "entries fd full null ptmx pts random shm stderr stdin stdout tty urandom zero",
                            "through-stdout",
                            "shm-ok",
                            "shm-bounded 1");
        }
    }

    private LocalRuntime runtime(boolean ownIds) {
        LocalRuntime runtime = LocalRuntime.builder(temp.resolve("state-" + ownIds))
                .isolation(LocalIsolation.REQUIRED)
                .userNamespaces(ownIds)
                .build();
        return ownIds ? runtime : LocalHostRootBehaviourTest.checked(runtime);
    }

    private static List<String> build(LocalRuntime runtime, ImageSpec spec) throws Exception {
        ImageBuilder builder = runtime.imageBuilder();
        builder.check(spec);
        List<String> log = new ArrayList<>();
        String hash = Integer.toHexString(spec.hashCode());
        builder.build(spec, "0".repeat(64 - hash.length()) + hash, log::add);
        return log;
    }
}
