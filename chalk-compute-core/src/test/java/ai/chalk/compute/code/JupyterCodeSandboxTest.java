package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.files.FileAccessDeniedException;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code jupyter} variant against Debian's {@code jupyter-server} with {@code python3-ipykernel}, started here on
 * loopback with a token of its own: the behaviours every variant has, plus charts as PNG bundles.
 */
class JupyterCodeSandboxTest extends CodeSandboxBehaviourTest {

    Process jupyter;
    Path log;
    URI url;
    String token = UUID.randomUUID().toString();

    @BeforeAll
    void startJupyter(@TempDir Path root) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        log = Files.createTempFile("jupyter-test-", ".log");
        jupyter = new ProcessBuilder(
                        "jupyter-server",
                        "--allow-root",
                        "--no-browser",
                        "--ServerApp.ip=127.0.0.1",
                        "--ServerApp.port=" + port,
                        "--ServerApp.port_retries=0",
                        "--ServerApp.token=" + token,
                        "--ServerApp.root_dir=" + root)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        url = URI.create("http://127.0.0.1:" + port + "/");
        JupyterRunner.awaitServer(
                url,
                token,
                java.time.Duration.ofSeconds(60),
                () -> jupyter.isAlive()
                        ? java.util.Optional.empty()
                        : java.util.Optional.of("jupyter-server did not start: " + read(log)));
    }

    private static String read(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return e.toString();
        }
    }

    @Override
    CodeSandbox create(SandboxConfig config) {
        return CodeSandbox.connectJupyter(url, token, config);
    }

    @AfterAll
    void stopJupyter() throws Exception {
        closeSandbox();
        if (jupyter != null) {
            jupyter.descendants().forEach(ProcessHandle::destroyForcibly);
            jupyter.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        if (log != null) {
            Files.deleteIfExists(log);
        }
    }

    @Test
    void chartsComeAsPngBundles() {
        ExecutionResult shown = sandbox.runCode("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()");
        assertThat(shown.results())
                .anySatisfy(r -> assertThat(r.png())
                        .hasValueSatisfying(
                                png -> assertThat(new String(png, 1, 3)).isEqualTo("PNG")));
    }

    @Test
    void pathsOutsideTheServersRootAreRefusedNamingIt() {
        assertThatThrownBy(() -> sandbox.files().readText("/etc/hostname"))
                .isInstanceOf(FileAccessDeniedException.class)
                .hasMessageContaining("outside the Jupyter server's root directory");
    }

    @Test
    void theVariantAndIdAreTheKernels() {
        assertThat(sandbox.variant()).isEqualTo(Variant.JUPYTER);
        assertThat(sandbox.id()).isNotBlank();
        assertThat(sandbox.toString()).contains("jupyter");
    }
}
