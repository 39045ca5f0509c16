package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The {@code docker} variant on the Docker engine CI starts, with the image {@code ci/build-test-images.sh jupyter}
 * builds from Debian's python3, jupyter-server and python3-ipykernel (built here the same way when it is missing).
 * Without an engine the tests fail and say why; nothing is skipped. The behaviours every variant has, plus the
 * container's own: its files are the container's, its limits apply, it is removed on close.
 */
@Tag("alone")
class DockerCodeSandboxTest extends CodeSandboxBehaviourTest {

    @BeforeAll
    void engineAndImage() {
        Result info = run("docker", "info", "--format", "{{.ServerVersion}}");
        assertThat(info.code)
                .as(
                        "a Docker engine must answer for the docker variant's tests (CI starts one with .ci/run;"
                                + " locally: apt-get install docker.io && dockerd &): %s",
                        info.output)
                .isZero();
        if (run("docker", "image", "inspect", DockerJupyter.DEFAULT_IMAGE).code != 0) {
            Path script = repositoryRoot().resolve("ci/build-test-images.sh");
            Result built = run("bash", script.toString(), "jupyter");
            assertThat(built.code)
                    .as("building %s: %s", DockerJupyter.DEFAULT_IMAGE, built.output)
                    .isZero();
        }
    }

    @Override
    CodeSandbox create(SandboxConfig config) {
        return CodeSandbox.create(Variant.DOCKER, config);
    }

    @Test
    void theContainerHasTheFilesTheLimitsAndTheEnvironmentAndGoesOnClose() {
        String id;
        try (CodeSandbox limited = CodeSandbox.create(
                Variant.DOCKER,
                SandboxConfig.builder()
                        .memory("256Mi")
                        .cpuLimit(0.5)
                        .env("GREETING", "hello")
                        .workingDir("/srv/work")
                        .build())) {
            id = limited.id();
            assertThat(limited.variant()).isEqualTo(Variant.DOCKER);
            assertThat(run("docker", "inspect", "--format", "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}", id)
                            .output
                            .strip())
                    .isEqualTo((256L << 20) + " 500000000");
            assertThat(limited.runCode("import os\nos.getcwd(), os.environ['GREETING']")
                            .text())
                    .isEqualTo("('/srv/work', 'hello')");
            assertThat(limited.commands().run("echo $GREETING; pwd").stdoutText())
                    .isEqualTo("hello\n/srv/work\n");
            // the container's own files, not this machine's
            assertThat(limited.files().readText("/etc/debian_version")).matches("12\\..*\\s*");
            limited.files().writeText("/srv/work/in-container.txt", "x");
            assertThat(Path.of("/srv/work/in-container.txt")).doesNotExist();
            assertThat(limited.files().list("/srv/work"))
                    .anySatisfy(f -> assertThat(f.name()).isEqualTo("in-container.txt"));
        }
        assertThat(run("docker", "inspect", id).code).isNotZero();
    }

    @Test
    void aMissingImageIsNamedWithHowToBuildOne() {
        assertThatThrownBy(() -> CodeSandbox.create(
                        Variant.DOCKER,
                        SandboxConfig.builder()
                                .environment("chalk-compute-test/absent:none")
                                .build()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("chalk-compute-test/absent:none")
                .hasMessageContaining("ci/build-test-images.sh jupyter");
    }

    record Result(int code, String output) {}

    static Result run(String... command) {
        try {
            Process p = new ProcessBuilder(List.of(command))
                    .redirectErrorStream(true)
                    .start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(10, TimeUnit.MINUTES)) {
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
        List<Path> tried = new ArrayList<>();
        while (dir != null && !Files.isRegularFile(dir.resolve("ci/build-test-images.sh"))) {
            tried.add(dir);
            dir = dir.getParent();
        }
        assertThat(dir)
                .as("the repository root (with ci/build-test-images.sh) above %s", tried)
                .isNotNull();
        return dir;
    }
}
