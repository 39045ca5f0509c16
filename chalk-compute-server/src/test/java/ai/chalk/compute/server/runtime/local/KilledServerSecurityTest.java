package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.server.cli.StandaloneServerTest;
import ai.chalk.compute.server.cli.StandaloneServerTest.ServerProcess;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A standalone server killed outright (SIGKILL, as the OOM killer would) leaves nothing behind, in both isolation
 * modes and without waiting for its next start: no sandbox process, no mount (layers, id-mapped views), no layer
 * directory, no cgroup.
 */
class KilledServerSecurityTest {

    @TempDir
    Path temp;

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void aKilledServerLeavesNoProcessMountLayerOrCgroup(String mode) throws Exception {
        Path dataDir = Files.createDirectories(temp.resolve("data-" + mode));
        Map<String, String> env = mode.equals("unshare")
                ? Map.of("PATH", LocalTesting.pathWithout(temp.resolve("path"), "bwrap"))
                : Map.of();
        ServerProcess server = StandaloneServerTest.launch(dataDir, env, "--isolation", "required");
        assertThat(String.join("\n", server.log())).contains("isolation " + mode);
        List<String> ids = new ArrayList<>();
        ManagedChannel channel = server.channel();
        try {
            for (int i = 0; i < 2; i++) {
                String id = SandboxServiceGrpc.newBlockingStub(channel)
                        .createSandbox(CreateSandboxRequest.getDefaultInstance())
                        .getSandbox()
                        .getId();
                ids.add(id);
                SandboxProcessServiceGrpc.newBlockingStub(channel)
                        .execCommand(ExecCommandRequest.newBuilder()
                                .setSandboxId(id)
                                .setCommand("sh")
                                .addArgs("-c")
                                .addArgs("sleep 3172 >/dev/null 2>&1 & echo started")
                                .build());
            }
        } finally {
            channel.shutdownNow();
        }
        Path sandboxes = dataDir.resolve("runtime").resolve("local").resolve("sandboxes");
        assertThat(mountsUnder(dataDir)).isNotEmpty();
        assertThat(cgroupsOf(ids)).isNotEmpty();

        server.process().destroyForcibly(); // SIGKILL: no chance to clean up itself
        assertThat(server.process().waitFor(30, TimeUnit.SECONDS)).isTrue();

        Awaitility.await()
                .atMost(Duration.ofSeconds(15))
                .pollInterval(Duration.ofMillis(200))
                .untilAsserted(() -> {
                    assertThat(LocalTesting.hostProcessesRunning("sleep 3172")).isEmpty();
                    assertThat(mountsUnder(dataDir)).isEmpty();
                    assertThat(cgroupsOf(ids)).isEmpty();
                    try (Stream<Path> left = Files.list(sandboxes)) {
                        assertThat(left.toList()).isEmpty();
                    }
                });
    }

    private static List<String> mountsUnder(Path dir) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .filter(l -> l.split(" ")[4].startsWith(dir.toString()))
                .toList();
    }

    /** This server's sandbox groups, in any hierarchy (chalk-compute/KEY/ID). */
    private static List<Path> cgroupsOf(List<String> ids) throws IOException {
        List<Path> found = new ArrayList<>();
        try (Stream<Path> all = Files.find(
                Path.of("/sys/fs/cgroup"),
                4,
                (p, a) -> a.isDirectory() && ids.contains(p.getFileName().toString()))) {
            all.forEach(found::add);
        }
        return found;
    }
}
