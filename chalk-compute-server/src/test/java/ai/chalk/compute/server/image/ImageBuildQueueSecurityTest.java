package ai.chalk.compute.server.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsRequest;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsResponse;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant asks for image builds of distinct specs as fast as it can: they queue behind the server's few builders, and
 * one environment that filled the queue kept every other environment's builds out. An environment now has at most half
 * of the builds not finished (running and queued); past that, RESOURCE_EXHAUSTED saying so, and no build is recorded
 * for the refused request, while another environment's builds are still taken.
 */
@Tag("alone")
class ImageBuildQueueSecurityTest {

    @Test
    void oneEnvironmentHasAtMostHalfTheBuildsNotFinished(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(
                dataDir,
                b -> b.parallelImageBuilds(1)
                        .runtime(DockerRuntimeOptions.builder()
                                .defaultImage(DockerTesting.image())
                                .build()))) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                int share = (1 + BuildCache.MAX_QUEUED) / 2;
                for (int i = 0; i < share; i++) {
                    // the first runs (a minute, far longer than the test), the others wait for the one builder
                    assertThat(getOrBuild(dev, ImageTesting.busybox("sleep 60", "echo " + i))
                                    .getStatus())
                            .isEqualTo(BuildAnswer.BUILDING);
                }
                StatusRuntimeException refused = catchThrowableOfType(
                        () -> getOrBuild(dev, ImageTesting.busybox("sleep 60", "echo one too many")),
                        StatusRuntimeException.class);
                assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(refused.getStatus().getDescription())
                        .isEqualTo("this environment has " + share + " image builds not finished, the most one"
                                + " environment may (half of the " + (1 + BuildCache.MAX_QUEUED) + " the server takes:"
                                + " 1 running, " + BuildCache.MAX_QUEUED + " queued): wait for some to finish");
                assertThat(getOrBuild(prod, ImageTesting.busybox("echo prod")).getStatus())
                        .isEqualTo(BuildAnswer.BUILDING);
                assertThat(builds(dev)).as("builds recorded for dev").isEqualTo(share);
            } finally {
                for (ManagedChannel c : List.of(dev, prod)) {
                    c.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                }
            }
        } finally {
            ImageTesting.removeBuilt();
        }
    }

    /** How many builds {@code channel}'s environment has on record. */
    private static int builds(Channel channel) {
        int count = 0;
        String cursor = "";
        do {
            ListCustomImageBuildsResponse page = CustomImageServiceGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS)
                    .listCustomImageBuilds(ListCustomImageBuildsRequest.newBuilder()
                            .setLimit(100)
                            .setCursor(cursor)
                            .build());
            count += page.getBuildsCount();
            cursor = page.hasNextCursor() ? page.getNextCursor() : "";
        } while (!cursor.isEmpty());
        return count;
    }

    private static GetOrBuildCustomImageResponse getOrBuild(Channel channel, ImageSpec spec) {
        return CustomImageServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .getOrBuildCustomImage(GetOrBuildCustomImageRequest.newBuilder()
                        .setImageSpec(spec)
                        .build());
    }
}
