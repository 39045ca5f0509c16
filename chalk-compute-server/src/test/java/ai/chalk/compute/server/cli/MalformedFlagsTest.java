package ai.chalk.compute.server.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The standalone server's flags that need more than a type check (the egress proxy's, the AI router's, the sandbox pool's):
 * malformed ones
 * are refused at once, naming the flag, before the server listens.
 */
class MalformedFlagsTest {

    private static String refused(Path dataDir, String... flags) throws Exception {
        Path logFile = Files.createTempFile(dataDir, "server-", ".log");
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                ServerMain.class.getName(),
                "--port",
                "0",
                "--data-dir",
                dataDir.toString()));
        command.addAll(List.of(flags));
        Process p = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(logFile.toFile())
                .start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String log = Files.readString(logFile, StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(log).isNotZero();
        return log;
    }

    @Test
    void malformedEgressFlagsAreRefusedNamingTheFlag(@TempDir Path dataDir) throws Exception {
        assertThat(refused(dataDir, "--egress-host", "api.example.com"))
                .contains("--egress-host api.example.com: expected NAME=ADDRESS")
                .doesNotContain("listening on");
        assertThat(refused(dataDir, "--egress-host", "api.example.com=not-an-ip"))
                .contains("not-an-ip is not an IP address");
        assertThat(refused(
                        dataDir, "--egress-ca", dataDir.resolve("missing.pem").toString()))
                .contains("is not a readable file");
    }

    @Test
    void malformedAiRouterFlagsAreRefusedNamingTheFlag(@TempDir Path dataDir) throws Exception {
        assertThat(refused(dataDir, "--ai-endpoint", "ftp://models.example.com/v1"))
                .contains("--ai-endpoint must be an http or https URL, not ftp://models.example.com/v1")
                .doesNotContain("listening on");
        assertThat(refused(dataDir, "--ai-api-key-file", dataDir.resolve("key").toString()))
                .contains("--ai-api-key-file needs --ai-endpoint");
        assertThat(refused(
                        dataDir,
                        "--ai-endpoint",
                        "https://api.openai.com/v1",
                        "--ai-api-key-file",
                        dataDir.resolve("missing.key").toString()))
                .contains("missing.key cannot be read");
    }

    @Test
    void aSandboxPoolSizeOutOfRangeIsRefusedNamingTheFlag(@TempDir Path dataDir) throws Exception {
        assertThat(refused(dataDir, "--sandbox-pool", "17"))
                .contains("--sandbox-pool must be between 0 and 16, not 17")
                .doesNotContain("listening on");
    }
}
