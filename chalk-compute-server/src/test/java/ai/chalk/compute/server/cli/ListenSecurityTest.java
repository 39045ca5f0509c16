package ai.chalk.compute.server.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
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
    void aHostBeyondLoopbackIsRefusedWithoutAuthentication(@TempDir Path dataDir) throws Exception {
        for (String host : List.of("0.0.0.0", "::")) {
            Path logFile = Files.createTempFile(dataDir, "server-", ".log");
            Process p = new ProcessBuilder(
                            Path.of(System.getProperty("java.home"), "bin", "java")
                                    .toString(),
                            "-cp",
                            System.getProperty("java.class.path"),
                            ServerMain.class.getName(),
                            "--port",
                            "0",
                            "--data-dir",
                            dataDir.toString(),
                            "--host",
                            host,
                            "--auth",
                            "none")
                    .redirectErrorStream(true)
                    .redirectOutput(logFile.toFile())
                    .start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            String log = Files.readString(logFile, StandardCharsets.UTF_8);
            assertThat(p.exitValue()).as(log).isNotZero();
            assertThat(log)
                    .contains("refusing to listen on " + host)
                    .contains("--auth none")
                    .doesNotContain("listening on")
                    .doesNotContain("\tat ");
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
    void everyAddressIsServedWithTokensAndWarnedAboutWithoutTls(@TempDir Path dataDir) throws Exception {
        StandaloneServerTest.ServerProcess server = StandaloneServerTest.launch(dataDir, "--host", "0.0.0.0");
        int port = server.port();
        ManagedChannel anonymous =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        ManagedChannel channel = server.channel();
        try {
            assertThat(server.log())
                    .anyMatch(l -> l.contains("WARN") && l.contains("without TLS") && l.contains("0.0.0.0:" + port));
            assertThatThrownBy(() -> SandboxServiceGrpc.newBlockingStub(anonymous)
                            .listSandboxes(ListSandboxesRequest.getDefaultInstance()))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED));
            SandboxServiceGrpc.newBlockingStub(channel).listSandboxes(ListSandboxesRequest.getDefaultInstance());
        } finally {
            anonymous.shutdownNow();
            channel.shutdownNow();
            server.process().destroy();
            server.process().waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void authNoneOnLoopbackServesEveryoneAndWarnsWhatItExposes(@TempDir Path dataDir) throws Exception {
        StandaloneServerTest.ServerProcess server = StandaloneServerTest.launch(dataDir, "--auth", "none");
        int port = server.port();
        ManagedChannel anonymous =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
            assertThat(server.log())
                    .anyMatch(l -> l.contains("WARN")
                            && l.contains("WITHOUT AUTHENTICATION")
                            && l.contains("127.0.0.1:" + port)
                            && l.contains("every sandbox")
                            && l.contains("run any command"));
            SandboxServiceGrpc.newBlockingStub(anonymous).listSandboxes(ListSandboxesRequest.getDefaultInstance());
            assertThat(dataDir.resolve("credentials.yml"))
                    .as("no credential is made without authentication")
                    .doesNotExist();
        } finally {
            anonymous.shutdownNow();
            server.process().destroy();
            server.process().waitFor(30, TimeUnit.SECONDS);
        }
    }
}
