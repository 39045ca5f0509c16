package ai.chalk.compute.server.image;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.RunCommandsStep;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Specs, waiting and cleanup for the image tests. Every spec carries a nonce (an env variable) so that each test run
 * builds its own images, and every image a test builds is removed afterwards: only those, never others' images.
 */
final class ImageTesting {

    private static final Set<String> BUILT = ConcurrentHashMap.newKeySet();

    private ImageTesting() {}

    /** A busybox spec with the given shell commands, unique to this test run. */
    static ImageSpec busybox(String... commands) {
        return ImageSpec.newBuilder()
                .setBaseImage(DockerTesting.image())
                .putEnv("CHALK_TEST_NONCE", UUID.randomUUID().toString())
                .addSteps(BuildStep.newBuilder()
                        .setRunCommands(RunCommandsStep.newBuilder().addAllCommands(List.of(commands))))
                .build();
    }

    /** Polls GetCustomImage until the build is no longer building; remembers its image for {@link #removeBuilt}. */
    static GetCustomImageResponse awaitFinished(
            CustomImageServiceGrpc.CustomImageServiceBlockingStub images, String buildId, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            GetCustomImageResponse r = images.getCustomImage(
                    GetCustomImageRequest.newBuilder().setBuildId(buildId).build());
            if (!r.getStatus().equals(BuildAnswer.BUILDING)) {
                built(r.getImage());
                return r;
            }
            assertThat(System.nanoTime())
                    .as("build %s still running after %s", buildId, timeout)
                    .isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    /** Remembers an image (or tag) a test made, to remove it at the end. */
    static void built(String ref) {
        if (ref != null && !ref.isEmpty()) {
            BUILT.add(ref);
        }
    }

    /** The Created timestamp the engine reports for an image. */
    static String created(String ref) {
        DockerTesting.Result r = DockerTesting.docker("image", "inspect", "--format", "{{.Created}}", ref);
        assertThat(r.code()).as(r.output()).isZero();
        return r.output().trim();
    }

    /** Removes the images the tests built. */
    static void removeBuilt() {
        for (String ref : List.copyOf(BUILT)) {
            DockerTesting.docker("image", "rm", "-f", ref);
            BUILT.remove(ref);
        }
    }
}
