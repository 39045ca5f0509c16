package ai.chalk.compute.server.runtime.host;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sandboxes directory's own mount, made where the host's mounts are shared, as systemd makes {@code /} (this
 * test's tmpfs stands for it, made shared in the server's own mount table; it needs root, as the server's runtime
 * does): the bind is private, so a layer mounted below it is mounted once, not also on every peer of the host's mount
 * and in every running sandbox's mount table that is a slave of it.
 */
@Tag("alone")
class SandboxesMountTest {

    @TempDir
    Path dir;

    @Test
    void theSandboxesDirectoryIsPrivateWhereTheHostSharesItsMounts() throws Exception {
        Path host = dir.resolve("host");
        Path sandboxes = host.resolve("sandboxes");
        Path layer = sandboxes.resolve("sb-1");
        Files.createDirectories(host);
        run("mount", "-t", "tmpfs", "-o", "size=1m", "chalk-test-host", host.toString());
        try {
            run("mount", "--make-shared", host.toString());
            Files.createDirectories(layer);

            SandboxesMount.bind(sandboxes);
            run("mount", "-t", "tmpfs", "-o", "size=1m", "chalk-test-layer", layer.toString());

            List<String> bind = mountInfo(sandboxes);
            assertThat(bind).hasSize(1);
            assertThat(optionalFields(bind.get(0))).doesNotContain("shared:").doesNotContain("master:");
            // shared, the bind would have joined the host mount's peer group, and the layer would be mounted twice:
            // once here, once on the peer, hidden below the bind
            assertThat(mountInfo(layer)).hasSize(1);
        } finally {
            run("umount", "-R", "-l", host.toString());
        }
    }

    /** The lines of {@code /proc/self/mountinfo} whose mount point is {@code path}. */
    private static List<String> mountInfo(Path path) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .filter(l -> l.split(" ")[4].equals(path.toString()))
                .toList();
    }

    /** A mountinfo line's optional fields (its propagation): those between the mount options and the separator. */
    private static String optionalFields(String line) {
        String[] f = line.split(" ");
        StringBuilder fields = new StringBuilder();
        for (int i = 6; i < f.length && !f[i].equals("-"); i++) {
            fields.append(f[i]).append(' ');
        }
        return fields.toString();
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(String.join(" ", command) + ": " + out).isZero();
    }
}
