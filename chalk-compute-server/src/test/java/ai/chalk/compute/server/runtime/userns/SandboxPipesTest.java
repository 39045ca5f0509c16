package ai.chalk.compute.server.runtime.userns;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Handing a process's standard streams to a sandbox's ids: its pipes, and nothing else (as root, as CI runs). */
class SandboxPipesTest {

    private static final IdRange IDS = new IdRange(3_000_000_000L, 65536);

    @TempDir
    Path temp;

    @Test
    void givesAProcesssPipesAndLeavesAFileItWritesToAlone() throws Exception {
        assertThat(SandboxPipes.works())
                .as("pidfd_getfd works here (Linux 5.6, as this project's CI has)")
                .isTrue();
        Path file = temp.resolve("out");
        Process p =
                new ProcessBuilder("sleep", "30").redirectOutput(file.toFile()).start();
        try {
            int fileOwner = (int) Files.getAttribute(file, "unix:uid");

            // stdout is a file: looked at for 200 ms, never changed
            assertThat(SandboxPipes.giveTo(p, IDS)).isFalse();

            assertThat((int) Files.getAttribute(file, "unix:uid")).isEqualTo(fileOwner);
            for (int fd : new int[] {0, 2}) {
                Path pipe = Path.of("/proc/" + p.pid() + "/fd/" + fd);
                assertThat(Files.readSymbolicLink(pipe).toString()).startsWith("pipe:");
                assertThat(Integer.toUnsignedLong((int) Files.getAttribute(pipe, "unix:uid")))
                        .isEqualTo(IDS.first());
                assertThat(Integer.toUnsignedLong((int) Files.getAttribute(pipe, "unix:gid")))
                        .isEqualTo(IDS.first());
            }
        } finally {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aProcessThatEndedGetsNothingAndStopsNothing() throws Exception {
        assertThat(SandboxPipes.works())
                .as("pidfd_getfd works here (Linux 5.6, as this project's CI has)")
                .isTrue();
        Process p = new ProcessBuilder("true").start();
        p.waitFor(10, TimeUnit.SECONDS);
        assertThat(SandboxPipes.giveTo(p, IDS)).isFalse();
        assertThat(SandboxPipes.works())
                .as("an ended process is no reason to stop handing pipes over")
                .isTrue();
    }
}
