package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Docker engine and images the docker runtime's tests use. The tests need a running engine (CI starts one) and
 * build their image from Debian's busybox-static with {@code ci/build-test-images.sh} when it is missing: nothing
 * is skipped when docker is absent, the tests fail and say why.
 */
public final class DockerTesting {

    /** A busybox image built from Debian's busybox-static package (ash as /bin/sh, busybox applets). */
    public static final String IMAGE = "chalk-compute-test/busybox:latest";
    /** A Debian bookworm minbase image made with debootstrap (dash as /bin/sh, coreutils). */
    public static final String DEBIAN_IMAGE = "chalk-compute-test/debian:bookworm";
    /** The Debian image with Debian's openjdk-17-jre-headless: function workers' image on the docker runtime. */
    public static final String JRE_IMAGE = "chalk-compute-test/jre:17";

    private static volatile boolean imageReady;
    private static volatile boolean debianReady;
    private static volatile boolean jreReady;

    private DockerTesting() {}

    /** Makes sure the test image exists, building it the way CI does when it does not. */
    public static synchronized String image() {
        if (imageReady) {
            return IMAGE;
        }
        assertThat(DockerRuntime.engineAnswers(null, java.time.Duration.ofSeconds(5)))
                .as(
                        "a Docker engine must answer at %s for the docker runtime's tests (CI starts one with .ci/run;"
                                + " locally: apt-get install docker.io busybox-static && dockerd &)",
                        DockerRuntime.resolveHost(null))
                .isTrue();
        if (docker("image", "inspect", IMAGE).code != 0) {
            Path script = repositoryRoot().resolve("ci/build-test-images.sh");
            Result built = run(List.of("bash", script.toString()));
            assertThat(built.code)
                    .as("building the test image with %s: %s", script, built.output)
                    .isZero();
        }
        imageReady = true;
        return IMAGE;
    }

    /** Makes sure the Debian test image exists, building it the way CI does when it does not (about a minute). */
    public static synchronized String debianImage() {
        image();
        if (!debianReady) {
            if (docker("image", "inspect", DEBIAN_IMAGE).code != 0) {
                Path script = repositoryRoot().resolve("ci/build-test-images.sh");
                Result built = run(List.of("bash", script.toString(), "debian"));
                assertThat(built.code)
                        .as("building the Debian test image with %s: %s", script, built.output)
                        .isZero();
            }
            debianReady = true;
        }
        return DEBIAN_IMAGE;
    }

    /**
     * Makes sure the JRE test image exists, building it the way CI does when it does not (the Debian image first,
     * then about 20-40 s of apt).
     */
    public static synchronized String jreImage() {
        debianImage();
        if (!jreReady) {
            if (docker("image", "inspect", JRE_IMAGE).code != 0) {
                Path script = repositoryRoot().resolve("ci/build-test-images.sh");
                Result built = run(List.of("bash", script.toString(), "jre"));
                assertThat(built.code)
                        .as("building the JRE test image with %s: %s", script, built.output)
                        .isZero();
            }
            jreReady = true;
        }
        return JRE_IMAGE;
    }

    /** A runtime for tests: the test image as its default. */
    static DockerRuntime runtime(Path state) {
        return DockerRuntime.builder(state).defaultImage(image()).build();
    }

    /** The container's upper (writable) directory on this host, as the engine reports it. */
    static Path upperDir(RuntimeSandbox sandbox) {
        Result r = docker(
                "inspect", "--format", "{{.GraphDriver.Data.UpperDir}}", ((DockerSandbox) sandbox).containerId());
        assertThat(r.code).as(r.output).isZero();
        return Path.of(r.output.trim());
    }

    public record Result(int code, String output) {}

    public static Result docker(String... args) {
        List<String> command = new java.util.ArrayList<>(List.of("docker"));
        command.addAll(List.of(args));
        return run(command);
    }

    static Result run(List<String> command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(5, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                return new Result(-1, out + " (timed out)");
            }
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            return new Result(-1, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "interrupted");
        }
    }

    private static Path repositoryRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("ci/build-test-images.sh"))) {
            dir = dir.getParent();
        }
        assertThat(dir)
                .as(
                        "the repository root (with ci/build-test-images.sh) above %s",
                        Path.of("").toAbsolutePath())
                .isNotNull();
        return dir;
    }

    /** A base for test classes whose every test gets a fresh docker runtime on its own state directory. */
    abstract static class WithRuntime {

        @TempDir
        Path state;

        DockerRuntime runtime;

        @BeforeEach
        void startRuntime() {
            runtime = runtime(state);
        }

        @AfterEach
        void stopRuntime() {
            if (runtime != null) {
                runtime.close();
            }
        }
    }
}
