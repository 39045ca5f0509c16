package ai.chalk.compute.server.runtime.local;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.server.cli.StandaloneServerTest;
import ai.chalk.compute.server.cli.StandaloneServerTest.ServerProcess;
import ai.chalk.compute.server.function.TestCode;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.awaitility.core.ThrowingRunnable;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A standalone server killed outright (SIGKILL, as the OOM killer would) leaves nothing behind, in both isolation
 * modes and without waiting for its next start: no sandbox process, no mount (layers, id-mapped views), no layer
 * directory, no cgroup, no image build step.
 */
@Tag("alone")
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

        killThenAwait(server, () -> {
            assertThat(LocalTesting.hostProcessesRunning("sleep 3172")).isEmpty();
            assertThat(mountsUnder(dataDir)).isEmpty();
            assertThat(cgroupsOf(ids)).isEmpty();
            try (Stream<Path> left = Files.list(sandboxes)) {
                assertThat(left.toList()).isEmpty();
            }
        });
    }

    /**
     * An image build step running when the server is killed goes with it, and so do the cgroups of its own and its
     * mounts (layers, terminals, root), which the server's watcher removes along with its sandboxes' (they stayed until
     * the next start before).
     */
    @Test
    void aKilledServerLeavesNoBuildStepNorItsCgroups() throws Exception {
        // a data directory whose name has a space, beside a directory named as its first word: the watcher, a root
        // shell, must take the path whole
        Path decoy = Files.createDirectories(temp.resolve("data"));
        Files.writeString(decoy.resolve("keep"), "not the server's");
        Path dataDir = Files.createDirectories(temp.resolve("data build"));
        // another run's leftovers (a test JVM killed mid-build, say) are not this server's to remove
        List<Path> before = buildGroups();
        ServerProcess server = StandaloneServerTest.launch(dataDir, Map.of(), "--isolation", "required");
        ManagedChannel channel = server.channel();
        List<Path> stepGroups;
        try {
            CustomImageServiceGrpc.newBlockingStub(channel)
                    .getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                            .setImageSpec(ImageSpec.newBuilder()
                                    .setBaseImage(DockerTesting.image())
                                    .putEnv(
                                            "CHALK_TEST_NONCE",
                                            UUID.randomUUID().toString())
                                    .addSteps(BuildStep.newBuilder()
                                            .setRunCommands(
                                                    RunCommandsStep.newBuilder().addCommands("sleep 3174"))))
                            .build());
            Awaitility.await()
                    .atMost(Duration.ofSeconds(60))
                    .until(() ->
                            !LocalTesting.hostProcessesRunning("sleep 3174").isEmpty()
                                    && !newGroups(before).isEmpty());
            stepGroups = newGroups(before);
        } finally {
            channel.shutdownNow();
        }

        killThenAwait(server, () -> {
            assertThat(LocalTesting.hostProcessesRunning("sleep 3174")).isEmpty();
            assertThat(stepGroups).noneMatch(Files::exists);
            // the step's layers, terminals and root were mounted under the builds' work directory
            assertThat(mountsUnder(dataDir)).isEmpty();
            try (Stream<Path> left = Files.list(dataDir.resolve("runtime/local/images/tmp"))) {
                assertThat(left.toList()).isEmpty();
            }
            assertThat(decoy.resolve("keep")).hasContent("not the server's");
        });
    }

    /**
     * A function replica running when the server is killed goes with its sandbox, and its run directory's file system
     * (a tmpfs whose pages the replica's memory held) goes with the server's watcher: it stayed mounted until the next
     * start before.
     */
    @Test
    void aKilledServerLeavesNoFunctionRunDirectory() throws Exception {
        Path dataDir = Files.createDirectories(temp.resolve("data-functions"));
        ServerProcess server = StandaloneServerTest.launch(dataDir, Map.of(), "--isolation", "required");
        ManagedChannel channel = server.channel();
        Path runRoot = dataDir.resolve("functions").resolve("run");
        try {
            TestCode code = new TestCode("killed");
            code.upload(channel);
            var catalog =
                    ExternalFunctionCatalogServiceGrpc.newBlockingStub(channel).withDeadlineAfter(90, TimeUnit.SECONDS);
            catalog.createExternalFunctionVersion(code.echoDeployment("killed"));
            String echoed = TestCode.echo(catalog, "killed", "ping");
            assertThat(echoed).contains("ping");
        } finally {
            channel.shutdownNow();
        }
        assertThat(mountsUnder(runRoot)).hasSize(1);

        killThenAwait(server, () -> {
            assertThat(mountsUnder(dataDir)).isEmpty();
            try (Stream<Path> left = Files.list(runRoot)) {
                assertThat(left.toList()).isEmpty();
            }
        });
    }

    /** The build step groups there are now and were not {@code before}. */
    private static List<Path> newGroups(List<Path> before) throws IOException {
        List<Path> now = new ArrayList<>(buildGroups());
        now.removeAll(before);
        return now;
    }

    /** The groups of running image build steps, in any hierarchy (chalk-compute/KEY/build-ID). */
    private static List<Path> buildGroups() throws IOException {
        List<Path> found = new ArrayList<>();
        try (Stream<Path> all = Files.find(
                Path.of("/sys/fs/cgroup"),
                4,
                (p, a) -> a.isDirectory() && p.getFileName().toString().startsWith("build-"))) {
            all.forEach(found::add);
        }
        return found;
    }

    /** Kills the server outright (SIGKILL: no chance to clean up itself), then waits until {@code nothingLeft} holds. */
    private static void killThenAwait(ServerProcess server, ThrowingRunnable nothingLeft) throws Exception {
        server.process().destroyForcibly();
        assertThat(server.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
        Awaitility.await()
                .atMost(Duration.ofSeconds(15))
                .pollInterval(Duration.ofMillis(200))
                .untilAsserted(nothingLeft);
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
