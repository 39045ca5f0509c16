package ai.chalk.compute.server.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import io.grpc.ManagedChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The standalone server has no authentication yet, so it listens beyond loopback only when told to,
 * and then says in its log what that exposes.
 */
class ListenSecurityTest {

    @Test
    void aHostBeyondLoopbackIsRefusedWithoutInsecureListen(@TempDir Path dataDir) throws Exception {
        for (String host : List.of("0.0.0.0", "::")) {
            Path logFile = Files.createTempFile(dataDir, "server-", ".log");
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"), ServerMain.class.getName(),
                    "--port", "0", "--data-dir", dataDir.toString(), "--host", host)
                    .redirectErrorStream(true).redirectOutput(logFile.toFile()).start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            String log = Files.readString(logFile, StandardCharsets.UTF_8);
            assertThat(p.exitValue()).as(log).isNotZero();
            assertThat(log).contains("refusing to listen on " + host).contains("--insecure-listen")
                    .doesNotContain("listening on").doesNotContain("\tat ");
        }
    }

    @Test
    void loopbackNamesNeedNoFlag(@TempDir Path dataDir) throws Exception {
        for (String host : List.of("localhost", "127.0.0.2", "::1")) {
            StandaloneServerTest.ServerProcess server = StandaloneServerTest.launch(dataDir, "--host", host);
            try {
                assertThat(server.log()).noneMatch(l -> l.contains("WITHOUT AUTHENTICATION"));
            } finally {
                server.process().destroy();
                server.process().waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void insecureListenServesEveryAddressAndWarnsWhatItExposes(@TempDir Path dataDir) throws Exception {
        StandaloneServerTest.ServerProcess server = StandaloneServerTest.launch(dataDir,
                "--host", "0.0.0.0", "--insecure-listen");
        ManagedChannel channel = server.channel();
        int port = server.port();
        try {
            assertThat(server.log()).anyMatch(l -> l.contains("WARN") && l.contains("WITHOUT AUTHENTICATION")
                    && l.contains("0.0.0.0:" + port) && l.contains("every sandbox")
                    && l.contains("run any command"));
            SandboxServiceGrpc.newBlockingStub(channel).listSandboxes(ListSandboxesRequest.getDefaultInstance());
        } finally {
            channel.shutdownNow();
            server.process().destroy();
            server.process().waitFor(30, TimeUnit.SECONDS);
        }
    }
}
