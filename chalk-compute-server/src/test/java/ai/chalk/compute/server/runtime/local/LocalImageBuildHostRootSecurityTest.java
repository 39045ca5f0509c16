package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.image.ImageBuilder;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Image build steps where the kernel cannot give a sandbox ids of its own (before 6.3): a step's root is then the
 * host's root with Docker's default capabilities (CHOWN, DAC_OVERRIDE, FOWNER, MKNOD ...), in a mount namespace of its
 * own. The device nodes it sees must be its own: bubblewrap's {@code --dev} binds the host's, and a step changed them.
 */
@Tag("alone")
class LocalImageBuildHostRootSecurityTest {

    @TempDir
    Path temp;

    private static final List<String> NODES = List.of("null", "zero", "full", "random", "urandom", "tty");
    private static final String ATTRIBUTES = "unix:mode,uid,gid,lastModifiedTime";

    @Test
    void aBuildStepChangesNoDeviceNodeOfTheHostAndOpensNoDeviceItMakes() throws Exception {
        Map<String, Map<String, Object>> before = new java.util.HashMap<>();
        for (String n : NODES) {
            before.put(n, Files.readAttributes(Path.of("/dev", n), ATTRIBUTES, LinkOption.NOFOLLOW_LINKS));
        }
        Path state = Files.createDirectories(temp.resolve("state"));
        try (LocalRuntime runtime = LocalHostRootBehaviourTest.checked(LocalRuntime.builder(state)
                .isolation(LocalIsolation.REQUIRED)
                .userNamespaces(false)
                .build())) {
            ImageBuilder builder = runtime.imageBuilder();
            ImageSpec spec = ImageSpec.newBuilder()
                    .setBaseImage(LocalImageSandboxTest.BUSYBOX)
                    .addSteps(LocalImageBuilderTest.runStep(
                            "grep -E '^CapEff' /proc/self/status",
                            "for n in " + String.join(" ", NODES) + "; do chmod 000 /dev/$n; chown 1:1 /dev/$n;"
                                    + " touch -d 2001-01-01 /dev/$n; done 2>/dev/null; true",
                            "for d in /dev /tmp; do if mknod $d/disk b 8 0 2>/dev/null && head -c1 $d/disk"
                                    + " >/dev/null 2>&1; then echo DEVICE-OPENED $d; fi; done; echo devices-tried"))
                    .build();
            builder.check(spec);
            List<String> log = new ArrayList<>();
            builder.build(spec, "e".repeat(64), log::add);
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
            NoFollowDelete.delete(temp.resolve("state"));
        }
    }
}
