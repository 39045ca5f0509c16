package ai.chalk.compute.image;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.ImageBuildFailedException;
import ai.chalk.compute.error.ImageBuildNotFoundException;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressSettings;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.DockerRuntimeOptions;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code client.images()} and {@code client.create(Sandbox.builder().image(image))} against a real server in this JVM on the docker runtime,
 * building busybox-based images with the real Docker engine, with the progress display captured.
 */
@Tag("alone")
class ImagesEndToEndTest {

    static final String BUSYBOX = "chalk-compute-test/busybox:latest";

    @TempDir
    static Path dataDir;

    static ComputeServer server;
    static SandboxClient client;
    static final ByteArrayOutputStream shown = new ByteArrayOutputStream();
    static final List<String> built = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        assertThat(docker("image", "inspect", BUSYBOX))
                .as("the test image %s (ci/build-test-images.sh builds it;" + " CI runs it before the tests)", BUSYBOX)
                .isZero();
        server = ComputeServer.builder()
                .dataDir(dataDir)
                .runtime(DockerRuntimeOptions.builder().defaultImage(BUSYBOX).build())
                .build()
                .start();
        ProgressSettings plain =
                ProgressSettings.fromEnv(Map.of("CHALK_SANDBOX_TUI", "true")).withTerminal(false);
        client = SandboxClient.inProcess(
                server.inProcessName(), ProgressDisplay.of(plain, new PrintStream(shown, true, UTF_8)));
    }

    @AfterAll
    static void stop() throws Exception {
        client.close();
        server.close();
        for (String ref : built) {
            docker("image", "rm", "-f", ref);
        }
    }

    static int docker(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("docker"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return p.exitValue();
    }

    private static String shownSinceMark(int mark) {
        byte[] all = shown.toByteArray();
        return new String(all, mark, all.length - mark, UTF_8);
    }

    @Test
    void anImageIsBuiltOnceShownWhileItBuildsAndRunsSandboxes(@TempDir Path local) throws Exception {
        Path tool = Files.writeString(local.resolve("tool.sh"), "#!/bin/sh\necho tool says $GREETING from $(pwd)\n");
        Image image = Image.base(BUSYBOX)
                .env(Map.of("GREETING", "hi", "NONCE", UUID.randomUUID().toString()))
                .runCommands("echo hello-from-the-build")
                .addLocalFile(tool, "bin/tool.sh", 0755)
                .workdir("/srv/app");
        int mark = shown.size();
        ImageBuild build = client.images().getOrBuild(image);
        built.add(build.imageRef());
        assertThat(build.status()).isEqualTo(ImageBuildStatus.SUCCEEDED);
        assertThat(build.imageRef())
                .isEqualTo("chalk-compute/custom:" + image.contentHash().substring(0, 32));
        assertThat(build.error()).isEmpty();

        List<String> lines = shownSinceMark(mark).lines().toList();
        assertThat(lines.get(0)).isEqualTo("Image build \"" + BUSYBOX + "\"");
        assertThat(lines.get(1))
                .isEqualTo("  │ › Building image from " + BUSYBOX + " with 2 step(s), content hash "
                        + image.contentHash());
        // the engine adds the content-hash label as a last instruction: 6 of the spec's, 7 in all
        assertThat(lines)
                .containsSubsequence(
                        "  │ › Step 1/7 : FROM " + BUSYBOX,
                        "  │ › Step 2/7 : WORKDIR \"/srv/app\"",
                        "  │ › Step 5/7 : RUN echo hello-from-the-build",
                        "  │ › hello-from-the-build",
                        "  │ › Step 6/7 : COPY [\"files/1\",\"/srv/app/bin/tool.sh\"]",
                        "  │ › Image ready: " + build.imageRef());
        assertThat(lines.get(lines.size() - 1)).isEqualTo("  └ ✓ Built " + build.imageRef());
        assertThat(lines.subList(1, lines.size() - 1)).allMatch(l -> l.startsWith("  │ › "));

        // the server names the image by the same content hash the client computes
        assertThat(client.images().list())
                .filteredOn(b -> b.buildId().equals(build.buildId()))
                .singleElement()
                .satisfies(b -> {
                    assertThat(b.contentHash()).isEqualTo(image.contentHash());
                    assertThat(b.baseImage()).isEqualTo(BUSYBOX);
                    assertThat(b.status()).isEqualTo(ImageBuildStatus.SUCCEEDED);
                });

        // asked again: there, nothing built, nothing shown
        mark = shown.size();
        ImageBuild again = client.images().getOrBuild(image);
        assertThat(again)
                .isEqualTo(new ImageBuild(
                        build.buildId(), ImageBuildStatus.EXISTS, build.imageRef(), java.util.Optional.empty()));
        assertThat(shownSinceMark(mark)).isEmpty();

        Sandbox sandbox = client.create(Sandbox.builder().image(image));
        try {
            assertThat(sandbox.info().buildId()).contains(build.buildId());
            ExecResult r = sandbox.exec("./bin/tool.sh");
            assertThat(r.stdoutText()).isEqualTo("tool says hi from /srv/app\n");
        } finally {
            sandbox.terminate();
        }
        assertThat(client.images().logs(build.buildId()))
                .extracting(BuildLogLine::message)
                .contains("hello-from-the-build");
    }

    @Test
    void aFailedBuildIsAResultForImagesAndAnExceptionForCreate() {
        Image broken = Image.base(BUSYBOX)
                .env("NONCE", UUID.randomUUID().toString())
                .runCommands("echo broken-step-output; exit 7");
        int mark = shown.size();
        assertThatThrownBy(() -> client.create(Sandbox.builder().image(broken)))
                .isInstanceOfSatisfying(ImageBuildFailedException.class, e -> {
                    assertThat(e.buildId()).isNotBlank();
                    assertThat(e.output())
                            .startsWith("steps[0] (run_commands[0]: echo broken-step-output; exit 7) failed:")
                            .endsWith("Last output:\nbroken-step-output");
                    assertThat(e.getMessage())
                            .startsWith("FAILED_PRECONDITION: image build " + e.buildId() + " failed: ");
                    assertThat(client.images().get(e.buildId()).status()).isEqualTo(ImageBuildStatus.FAILED);
                    assertThat(client.images().logs(e.buildId()))
                            .extracting(BuildLogLine::message)
                            .contains("broken-step-output");
                });
        List<String> lines = shownSinceMark(mark).lines().toList();
        assertThat(lines).contains("  │ › broken-step-output");
        assertThat(lines.get(lines.size() - 1))
                .startsWith("  └ ✗ Failed: steps[0] (run_commands[0]: echo"
                        + " broken-step-output; exit 7) failed: The command '/bin/sh -c echo broken-step-output; exit 7'"
                        + " returned a non-zero code: 7");

        ImageBuild again = client.images().build(broken);
        assertThat(again.status()).isEqualTo(ImageBuildStatus.FAILED);
        assertThat(again.error()).get().asString().contains("broken-step-output");

        assertThatThrownBy(() -> client.images().get("no-such-build"))
                .isInstanceOf(ImageBuildNotFoundException.class)
                .hasMessageContaining("no-such-build");
    }
}
