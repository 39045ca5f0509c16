package ai.chalk.compute.server.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server as users self-host it: a separate JVM started from the command line, which logs
 * where it listens and the isolation in force, stops cleanly on SIGTERM, and after a crash
 * reports the sandboxes that were running as terminated, saying why.
 */
@Tag("alone")
public class StandaloneServerTest {

    private static final Pattern LISTENING = Pattern.compile("listening on \\S+:(\\d+)");

    /** A server JVM and the file it logs to. */
    public record ServerProcess(Process process, Path logFile) {
        public List<String> log() throws IOException {
            return Files.readAllLines(logFile, StandardCharsets.UTF_8);
        }

        int port() throws IOException {
            for (String line : log()) {
                Matcher m = LISTENING.matcher(line);
                if (m.find()) {
                    return Integer.parseInt(m.group(1));
                }
            }
            return -1;
        }

        /**
         * A channel whose calls carry a token got, as a newcomer would, with the first credential the server wrote to
         * {@code <data-dir>/credentials.yml}.
         */
        public ManagedChannel channel() throws IOException {
            String yml = Files.readString(logFile.getParent().resolve("credentials.yml"), StandardCharsets.UTF_8);
            AtomicReference<String> token = new AtomicReference<>();
            ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", port())
                    .usePlaintext()
                    .intercept(RunningServer.bearer(token))
                    .build();
            token.set(AuthServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                    .getToken(GetTokenRequest.newBuilder()
                            .setClientId(value(yml, "clientId"))
                            .setClientSecret(value(yml, "clientSecret"))
                            .build())
                    .getAccessToken());
            return channel;
        }

        private static String value(String yml, String key) {
            Matcher m = Pattern.compile(key + ": \"([^\"]+)\"").matcher(yml);
            assertThat(m.find()).as("%s in credentials.yml", key).isTrue();
            return m.group(1);
        }
    }

    /** Starts a server JVM whose log goes to a file (a pipe read while the JVM exits can lose its last lines). */
    static ServerProcess launch(Path dataDir, String... moreArgs) throws Exception {
        return launch(dataDir, java.util.Map.of(), moreArgs);
    }

    /** As {@link #launch(Path, String...)}, with {@code env} added to the server's environment (a PATH ...). */
    public static ServerProcess launch(Path dataDir, java.util.Map<String, String> env, String... moreArgs)
            throws Exception {
        Path logFile = Files.createTempFile(dataDir, "server-", ".log");
        List<String> command = new java.util.ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                ServerMain.class.getName(),
                "--port",
                "0",
                "--data-dir",
                dataDir.toString()));
        command.addAll(List.of(moreArgs));
        ProcessBuilder pb =
                new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(logFile.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        ServerProcess server = new ServerProcess(p, logFile);
        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> server.port() > 0 || !p.isAlive());
        assertThat(server.port()).as("server log: %s", server.log()).isPositive();
        return server;
    }

    @Test
    void logsWhereItListensAndStopsCleanlyOnSigterm(@TempDir Path dataDir) throws Exception {
        ServerProcess server = launch(dataDir);
        assertThat(String.join("\n", server.log())).contains("runtime local").contains("isolation ");
        ManagedChannel channel = server.channel();
        try {
            String id = SandboxServiceGrpc.newBlockingStub(channel)
                    .createSandbox(CreateSandboxRequest.getDefaultInstance())
                    .getSandbox()
                    .getId();
            assertThat(SandboxProcessServiceGrpc.newBlockingStub(channel)
                            .execCommand(ExecCommandRequest.newBuilder()
                                    .setSandboxId(id)
                                    .setCommand("echo")
                                    .addArgs("standalone")
                                    .build())
                            .getStdout()
                            .toStringUtf8())
                    .isEqualTo("standalone\n");
        } finally {
            channel.shutdownNow();
        }
        server.process().destroy(); // SIGTERM
        assertThat(server.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(server.process().exitValue()).isIn(0, 143);
        assertThat(server.log())
                .as(String.join("\n", server.log()))
                .anyMatch(l -> l.contains("terminated: the server shut down"))
                .anyMatch(l -> l.contains("Chalk Compute server stopped"));
        assertThat(server.log()).noneMatch(l -> l.contains("Exception"));
    }

    @Test
    void workerImageNamesTheImageOfFunctionWorkersOnTheDockerRuntime(@TempDir Path dataDir) throws Exception {
        String busybox = DockerTesting.image();
        ServerProcess server = launch(
                dataDir,
                "--runtime",
                "docker",
                "--docker-default-image",
                busybox,
                "--worker-image",
                "chalk-compute-test/some-jre:1");
        server.process().destroy();
        assertThat(server.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(server.log())
                .as(String.join("\n", server.log()))
                .anyMatch(
                        l -> l.contains(
                                "Function workers on the docker runtime run the java of image \"chalk-compute-test/some-jre:1\""));
    }

    @Test
    void afterACrashRunningSandboxesAreListedAsTerminatedWithTheReason(@TempDir Path dataDir) throws Exception {
        ServerProcess first = launch(dataDir);
        String id;
        ManagedChannel channel = first.channel();
        try {
            id = SandboxServiceGrpc.newBlockingStub(channel)
                    .createSandbox(CreateSandboxRequest.getDefaultInstance())
                    .getSandbox()
                    .getId();
        } finally {
            channel.shutdownNow();
        }
        first.process().destroyForcibly(); // SIGKILL: no chance to clean up
        first.process().waitFor(30, TimeUnit.SECONDS);

        ServerProcess second = launch(dataDir);
        channel = second.channel();
        try {
            SandboxInfo info = SandboxServiceGrpc.newBlockingStub(channel)
                    .getSandbox(GetSandboxRequest.newBuilder()
                            .setSandboxId(id)
                            .setIncludeTerminated(true)
                            .build())
                    .getSandbox();
            assertThat(info.getState()).isEqualTo("TERMINATED");
            assertThat(info.getStatusMessage()).contains("the server restarted");
        } finally {
            channel.shutdownNow();
            second.process().destroy();
            second.process().waitFor(30, TimeUnit.SECONDS);
        }
        // the crashed server's sandbox processes died with it
        assertThat(ProcessHandle.allProcesses()
                        .filter(p -> p.info().commandLine().orElse("").contains(id)))
                .isEmpty();
    }
}
