package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code jupyter} variant against Debian's {@code jupyter-server} with {@code python3-ipykernel}, started here on
 * loopback with a token of its own: the behaviours of {@link CodeSandboxTest} that a kernel has, with the same
 * result shape.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class JupyterCodeSandboxTest {

    Process jupyter;
    URI url;
    String token = UUID.randomUUID().toString();
    CodeSandbox sandbox;

    @BeforeAll
    void startJupyter(@TempDir Path root) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
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
                .redirectOutput(root.resolve("jupyter.log").toFile())
                .start();
        url = URI.create("http://127.0.0.1:" + port + "/");
        HttpClient http = HttpClient.newHttpClient();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                HttpResponse<String> status = http.send(
                        HttpRequest.newBuilder(url.resolve("api/status"))
                                .header("Authorization", "token " + token)
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                if (status.statusCode() == 200) {
                    break;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (System.nanoTime() > deadline || !jupyter.isAlive()) {
                throw new AssertionError(
                        "jupyter-server did not start: " + java.nio.file.Files.readString(root.resolve("jupyter.log")));
            }
            Thread.sleep(200);
        }
        sandbox = CodeSandbox.connectJupyter(
                url,
                token,
                SandboxConfig.builder().timeout(Duration.ofSeconds(60)).build());
    }

    @AfterAll
    void stopJupyter() throws Exception {
        if (sandbox != null) {
            sandbox.close();
        }
        if (jupyter != null) {
            jupyter.descendants().forEach(ProcessHandle::destroyForcibly);
            jupyter.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void stateTextAndStreamingAsInTheReadme() {
        sandbox.runCode("x = 40");
        assertThat(sandbox.runCode("x + 2").text()).isEqualTo("42");
        List<OutputMessage> lines = new CopyOnWriteArrayList<>();
        ExecutionResult printed = sandbox.runCode(
                "import sys\nfor i in range(3): print(f'Step {i}')\nprint('warn', file=sys.stderr)",
                RunOptions.defaults().onStdout(lines::add));
        assertThat(lines).extracting(OutputMessage::line).containsExactly("Step 0", "Step 1", "Step 2");
        assertThat(printed.stdout()).isEqualTo("Step 0\nStep 1\nStep 2\n");
        assertThat(printed.stderr()).isEqualTo("warn\n");
        assertThat(printed.success()).isTrue();
    }

    @Test
    void theOutcomesAreKeptApartAsInAChalkSandbox() {
        ExecutionResult error = sandbox.runCode("1 / 0");
        assertThat(error.executionOk()).isTrue();
        assertThat(error.codeError()).hasValueSatisfying(e -> {
            assertThat(e.name()).isEqualTo("ZeroDivisionError");
            assertThat(e.value()).isEqualTo("division by zero");
            assertThat(e.traceback()).contains("ZeroDivisionError").doesNotContain("\u001B[");
        });

        sandbox.runCode("kept = 1");
        ExecutionResult exit = sandbox.runCode("import sys\nsys.exit(3)");
        assertThat(exit.exitCode()).hasValue(3);
        assertThat(exit.codeError()).isEmpty();
        assertThat(sandbox.runCode("'kept' in globals()").text()).isEqualTo("False");

        sandbox.runCode("stays = 5");
        ExecutionResult timedOut = sandbox.runCode(
                "import time\ntime.sleep(30)", RunOptions.defaults().timeout(Duration.ofSeconds(1)));
        assertThat(timedOut.executionOk()).isFalse();
        assertThat(timedOut.executionError())
                .hasValueSatisfying(m -> assertThat(m).startsWith("timed out after 1s"));
        assertThat(sandbox.runCode("stays").text()).isEqualTo("5");
    }

    @Test
    void anInterruptRaisesKeyboardInterrupt() throws Exception {
        CompletableFuture<ExecutionResult> sleeping = CompletableFuture.supplyAsync(() -> sandbox.runCode(
                "import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
                RunOptions.defaults().onStdout(m -> sandbox.interrupt())));
        ExecutionResult result = sleeping.get(60, TimeUnit.SECONDS);
        assertThat(result.codeError())
                .hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("KeyboardInterrupt"));
    }

    @Test
    void richResultsAndChartsComeAsMimeBundles() {
        ExecutionResult shown = sandbox.runCode("class Page:\n"
                + "    def _repr_html_(self): return '<h1>hi</h1>'\n"
                + "display(Page())\n"
                + "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()");
        assertThat(shown.results()).anySatisfy(r -> assertThat(r.html()).hasValue("<h1>hi</h1>"));
        assertThat(shown.results())
                .anySatisfy(r -> assertThat(r.png())
                        .hasValueSatisfying(
                                png -> assertThat(new String(png, 1, 3)).isEqualTo("PNG")));
    }

    @Test
    void filesAndCommandsNeedAChalkSandbox() {
        assertThatThrownBy(() -> sandbox.files())
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("chalk variant");
    }
}
