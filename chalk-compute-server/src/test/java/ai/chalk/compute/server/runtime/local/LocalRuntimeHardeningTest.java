package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.RunningServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Attacks a sandbox's root (uid 0 without capabilities) could try on the host: replacing the
 * paths privileged helpers load code from, reading root-only host files, and leaving setuid files
 * where other host users reach them.
 */
class LocalRuntimeHardeningTest {

    private static String sh(RunningServer server, String sandbox, String script) {
        return server.processes()
                .execCommand(ExecCommandRequest.newBuilder()
                        .setSandboxId(sandbox)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build())
                .getStdout()
                .toStringUtf8();
    }

    @Test
    void theLoaderAndLibraryPathsCannotBeReplaced(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = server.createSandbox();
            for (String entry : new String[] {"/bin", "/lib", "/lib64", "/sbin", "/usr", "/etc"}) {
                if (!Files.exists(Path.of(entry))) {
                    continue;
                }
                assertThat(sh(
                                server,
                                id,
                                "rm -f " + entry + " 2>/dev/null; mv " + entry + " /moved 2>/dev/null;" + " rmdir "
                                        + entry + " 2>/dev/null; test -d " + entry + " && ls " + entry + " | head -1"))
                        .as(entry + " survives attempts to remove or move it")
                        .isNotBlank();
            }
            // execs keep working: the helpers that enter the sandbox still load the host's own loader
            assertThat(sh(server, id, "echo still-fine")).isEqualTo("still-fine\n");
        }
    }

    /**
     * Alone: the root-only file it writes in the host's {@code /etc} is masked in every sandbox started meanwhile, and
     * one started as it was removed (SocketMemorySecurityTest's, in CI110) failed to mount the mask.
     */
    @Test
    @Tag("alone")
    void rootOnlyHostFilesUnderEtcAreMasked(@TempDir Path dataDir) throws Exception {
        Path secret = Path.of(
                "/etc/chalk-compute-test-secret-" + ProcessHandle.current().pid());
        Files.writeString(secret, "root only");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = server.createSandbox();
            assertThat(sh(server, id, "cat " + secret + " 2>&1; cat /etc/shadow 2>&1 | head -c 100"))
                    .doesNotContain("root only")
                    .doesNotContain("root:");
            assertThat(sh(server, id, "cat /etc/hostname /etc/passwd | head -1"))
                    .isNotBlank();
        } finally {
            Files.deleteIfExists(secret);
        }
    }

    @Test
    void whatSandboxesLeaveOnDiskIsPrivateToTheServer(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            for (String area : new String[] {"state", "runtime", "volumes"}) {
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dataDir.resolve(area))))
                        .isEqualTo("rwx------");
            }
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ComputeServer.builder()
                        .dataDir(Path.of("/usr/local/chalk-data"))
                        .build()
                        .start())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sees read-only");
    }
}
