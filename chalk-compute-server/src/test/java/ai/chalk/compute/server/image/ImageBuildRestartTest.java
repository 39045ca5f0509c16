package ai.chalk.compute.server.image;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.common.v1.LogEntry;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.store.Database;
import ai.chalk.compute.server.store.ImageBuildStore;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Builds across server restarts: nothing is left "building" that no process builds any more. */
@Tag("alone")
class ImageBuildRestartTest {

    private static final UnaryOperator<ai.chalk.compute.server.ComputeServer.Builder> DOCKER = b -> b.runtime(
            DockerRuntimeOptions.builder().defaultImage(DockerTesting.image()).build());

    @AfterAll
    static void removeImages() {
        ImageTesting.removeBuilt();
    }

    private static CustomImageServiceGrpc.CustomImageServiceBlockingStub images(RunningServer server) {
        return CustomImageServiceGrpc.newBlockingStub(server.channel).withDeadlineAfter(2, TimeUnit.MINUTES);
    }

    @Test
    void aBuildThatACrashedServerLeftRunningIsRecordedFailedAtTheNextStart(@TempDir Path dataDir) throws Exception {
        ImageSpec spec = ImageTesting.busybox("echo rebuilt");
        // what a server that died mid-build leaves in its store: a build still BUILDING, with the lines logged so far
        String id = "crashed-build";
        try (Database db = Database.open(dataDir)) {
            ImageBuildStore store = new ImageBuildStore(db);
            store.insert(
                    "default",
                    id,
                    ContentHash.of(spec),
                    spec.getBaseImage(),
                    ContentHash.canonicalBytes(spec),
                    Optional.empty(),
                    Instant.now());
            store.appendLog(id, 1, Instant.now(), "INFO", "Step 1/3 : FROM " + spec.getBaseImage());
        }
        try (RunningServer server = RunningServer.start(dataDir, DOCKER)) {
            GetCustomImageResponse crashed = images(server)
                    .getCustomImage(
                            GetCustomImageRequest.newBuilder().setBuildId(id).build());
            assertThat(crashed.getStatus()).isEqualTo("failed");
            assertThat(crashed.getError()).isEqualTo(BuildCache.RESTARTED);
            List<LogEntry> logs = images(server)
                    .getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                            .setBuildId(id)
                            .build())
                    .getLogsList();
            assertThat(logs)
                    .extracting(LogEntry::getMessage)
                    .containsExactly("Step 1/3 : FROM " + spec.getBaseImage(), "Build failed: " + BuildCache.RESTARTED);
            GetOrBuildCustomImageResponse again = images(server)
                    .getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                            .setImageSpec(spec)
                            .build());
            assertThat(again.getStatus()).isEqualTo("building");
            assertThat(again.getBuildId()).isNotEqualTo(id);
            assertThat(ImageTesting.awaitFinished(images(server), again.getBuildId(), Duration.ofMinutes(2))
                            .getStatus())
                    .isEqualTo("succeeded");
        }
    }

    @Test
    void stoppingTheServerCancelsRunningBuildsAndRecordsWhy(@TempDir Path dataDir) throws Exception {
        ImageSpec spec = ImageTesting.busybox("echo started; sleep 60");
        ImageTesting.built(
                "chalk-compute/custom:" + ContentHash.of(spec).substring(0, 32)); // should the engine finish it
        String id;
        long closing;
        try (RunningServer server = RunningServer.start(dataDir, DOCKER)) {
            id = images(server)
                    .getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                            .setImageSpec(spec)
                            .build())
                    .getBuildId();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
            while (images(server)
                    .getCustomImageBuildLogs(GetCustomImageBuildLogsRequest.newBuilder()
                            .setBuildId(id)
                            .build())
                    .getLogsList()
                    .stream()
                    .noneMatch(l -> l.getMessage().equals("started"))) {
                assertThat(System.nanoTime()).as("the build's command started").isLessThan(deadline);
                Thread.sleep(100);
            }
            closing = System.nanoTime();
        }
        assertThat(Duration.ofNanos(System.nanoTime() - closing))
                .as("the build did not hold up the shutdown")
                .isLessThan(Duration.ofSeconds(20));
        try (RunningServer server = RunningServer.start(dataDir, DOCKER)) {
            GetCustomImageResponse r = images(server)
                    .getCustomImage(
                            GetCustomImageRequest.newBuilder().setBuildId(id).build());
            assertThat(r.getStatus()).isEqualTo("failed");
            assertThat(r.getError()).isEqualTo(BuildCache.SHUT_DOWN);
        }
    }
}
