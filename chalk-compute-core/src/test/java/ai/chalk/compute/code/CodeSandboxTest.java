package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.sandbox.ExecStream;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * code_sandboxes' README, in Java, on the chalk variant: a real server, real sandboxes of the local runtime and their
 * python3. Each behaviour it documents (state, {@code text}, streaming callbacks, the four outcomes, rich results,
 * files, commands, snapshots) is checked as a user would see it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CodeSandboxTest {

    ComputeServer server;
    SandboxClient client;
    CodeSandbox sandbox;

    @BeforeAll
    void startServer(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
    }

    @BeforeEach
    void create() {
        sandbox = CodeSandbox.create(
                client, SandboxConfig.builder().timeout(Duration.ofSeconds(60)).build());
    }

    @AfterEach
    void close() {
        sandbox.close();
    }

    @AfterAll
    void stopServer() {
        client.close();
        server.close();
    }

    @Test
    void stateCarriesOverAndTheLastExpressionIsTheText() {
        sandbox.runCode("x = 1 + 1");
        ExecutionResult printed = sandbox.runCode("print(x)");
        assertThat(printed.stdout()).isEqualTo("2\n");
        assertThat(printed.success()).isTrue();
        assertThat(printed.text()).isEmpty();

        ExecutionResult block = sandbox.runCode("\nx = 10\nx * 2\n");
        assertThat(block.text()).isEqualTo("20");
        assertThat(block.results())
                .singleElement()
                .satisfies(r -> assertThat(r.isMainResult()).isTrue());
    }

    @Test
    void stdoutAndStderrCallbacksGetEachLineAsItComes() {
        List<OutputMessage> lines = new CopyOnWriteArrayList<>();
        ExecutionResult result = sandbox.runCode(
                "import sys, time\nfor i in range(5):\n    print(f'Step {i}')\n    time.sleep(0.2)\n"
                        + "print('warn', file=sys.stderr)\nprint('no newline', end='')",
                RunOptions.defaults().onStdout(lines::add).onStderr(lines::add));
        assertThat(lines)
                .extracting(OutputMessage::line)
                .containsSubsequence("Step 0", "Step 1", "Step 2", "Step 3", "Step 4", "no newline")
                .contains("warn");
        assertThat(lines.stream().filter(OutputMessage::error))
                .extracting(OutputMessage::line)
                .containsExactly("warn");
        // the first line came while the snippet still slept through the others
        assertThat(Duration.between(lines.get(0).timestamp(), lines.get(4).timestamp()))
                .isGreaterThan(Duration.ofMillis(600));
        assertThat(result.stdout()).endsWith("Step 4\nno newline");
    }

    @Test
    void theFourOutcomesAreKeptApart() {
        ExecutionResult ok = sandbox.runCode("'fine'");
        assertThat(ok.success()).isTrue();
        assertThat(ok.executionOk()).isTrue();
        assertThat(ok.codeError()).isEmpty();
        assertThat(ok.exitCode()).isEmpty();
        assertThat(ok.text()).isEqualTo("'fine'");

        ExecutionResult error = sandbox.runCode("def f():\n    return 1 / 0\nf()");
        assertThat(error.success()).isFalse();
        assertThat(error.executionOk()).isTrue();
        assertThat(error.exitCode()).isEmpty();
        assertThat(error.codeError()).hasValueSatisfying(e -> {
            assertThat(e.name()).isEqualTo("ZeroDivisionError");
            assertThat(e.value()).isEqualTo("division by zero");
            assertThat(e.traceback()).contains("line 2, in f").endsWith("ZeroDivisionError: division by zero\n");
        });

        sandbox.runCode("kept = 1");
        ExecutionResult exit = sandbox.runCode("import sys\nsys.exit(3)");
        assertThat(exit.executionOk()).isTrue();
        assertThat(exit.exitCode()).hasValue(3);
        assertThat(exit.codeError()).isEmpty();
        assertThat(exit.success()).isFalse();
        assertThat(sandbox.runCode("'kept' in globals()").text()).isEqualTo("False");

        ExecutionResult timedOut = sandbox.runCode(
                "import time\ntime.sleep(30)", RunOptions.defaults().timeout(Duration.ofSeconds(1)));
        assertThat(timedOut.executionOk()).isFalse();
        assertThat(timedOut.executionError())
                .hasValueSatisfying(m -> assertThat(m).startsWith("timed out after 1s"));
        assertThat(timedOut.success()).isFalse();
    }

    @Test
    void aSandboxThatIsGoneIsAnExecutionErrorNotAnException() {
        CodeSandbox gone = CodeSandbox.create(client, SandboxConfig.defaults());
        gone.terminate();
        ExecutionResult result = gone.runCode("1");
        assertThat(result.executionOk()).isFalse();
        assertThat(result.executionError())
                .hasValueSatisfying(m -> assertThat(m).contains(gone.id()));
        gone.close();
    }

    @Test
    void anInterruptFromAnotherThreadRaisesKeyboardInterruptAndKeepsTheState() throws Exception {
        sandbox.runCode("count = 7");
        CompletableFuture<ExecutionResult> sleeping = CompletableFuture.supplyAsync(() -> sandbox.runCode(
                "import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
                RunOptions.defaults().onStdout(m -> sandbox.interrupt())));
        ExecutionResult result = sleeping.get(30, TimeUnit.SECONDS);
        assertThat(result.executionOk()).isTrue();
        assertThat(result.codeError())
                .hasValueSatisfying(e -> assertThat(e.name()).isEqualTo("KeyboardInterrupt"));
        assertThat(sandbox.runCode("count").text()).isEqualTo("7");
    }

    @Test
    void richResultsChartsAndTheArtifactLimit() {
        ExecutionResult shown = sandbox.runCode("class Page:\n"
                + "    def _repr_html_(self): return '<h1>hi</h1>'\n"
                + "    def __repr__(self): return 'Page()'\n"
                + "display(Page())\n"
                + "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n"
                + "{'a': 1}");
        assertThat(shown.results()).hasSize(3);
        assertThat(shown.results().get(0).html()).hasValue("<h1>hi</h1>");
        assertThat(shown.results().get(0).isMainResult()).isFalse();
        // as in Jupyter: what it displayed, its value, then the figures still open when it ended
        assertThat(shown.results().get(1).isMainResult()).isTrue();
        assertThat(shown.results().get(2).png())
                .hasValueSatisfying(png -> assertThat(png.length).isGreaterThan(1000));
        assertThat(shown.text()).isEqualTo("{'a': 1}");

        ExecutionResult limited = sandbox.runCode(
                "import matplotlib.pyplot as plt\n_ = plt.plot([1, 2])",
                RunOptions.defaults().maxArtifactBytes(100));
        assertThat(limited.results()).extracting(Result::formats).containsExactly(java.util.Set.of("text/plain"));
        assertThat(limited.skippedArtifacts()).singleElement().satisfies(s -> {
            assertThat(s.name()).isEqualTo("figure-1.png");
            assertThat(s.byteSize()).isGreaterThan(100);
        });
    }

    @Test
    void filesAndCommandsAreTheSandboxes() {
        sandbox.files().writeText("/tmp/test.txt", "Hello World");
        assertThat(sandbox.files().readText("/tmp/test.txt")).isEqualTo("Hello World");
        assertThat(sandbox.files().list("/tmp"))
                .anySatisfy(f -> assertThat(f.name()).isEqualTo("test.txt"));
        assertThat(sandbox.runCode("open('/tmp/test.txt').read()").text()).isEqualTo("'Hello World'");
        assertThat(sandbox.commands().run("ls /tmp && exit 4").exitCode()).isEqualTo(4);
        try (ExecStream process = sandbox.commands().exec("python3", "-c", "print('hello')")) {
            assertThat(process.lines()).containsExactly("hello");
        }
    }

    @Test
    void aSnapshotStartsANewSandboxWithTheFiles() {
        sandbox.runCode("open('/tmp/setup.txt', 'w').write('ready')");
        CodeSnapshot snapshot = sandbox.createSnapshot("my-setup");
        assertThat(snapshot.name()).isEqualTo("my-setup");
        try (CodeSandbox restored = CodeSandbox.create(
                client, SandboxConfig.builder().snapshot(snapshot.id()).build())) {
            assertThat(restored.runCode("open('/tmp/setup.txt').read()").text()).isEqualTo("'ready'");
        }
        snapshot.snapshot().delete();
    }

    @Test
    void fromIdSharesTheInterpreterAndLeavesTheSandboxRunning() {
        sandbox.runCode("shared = 'yes'");
        try (CodeSandbox again = CodeSandbox.fromId(client, sandbox.id())) {
            assertThat(again.runCode("shared").text()).isEqualTo("'yes'");
        }
        assertThat(CodeSandbox.list(client))
                .anySatisfy(info -> assertThat(info.id()).isEqualTo(sandbox.id()));
        assertThat(sandbox.runCode("shared").text()).isEqualTo("'yes'");
    }

    @Test
    void setTimeoutAppliesToTheNextSnippets() {
        sandbox.setTimeout(Duration.ofSeconds(1));
        ExecutionResult result = sandbox.runCode("import time\ntime.sleep(20)");
        assertThat(result.executionError())
                .hasValueSatisfying(m -> assertThat(m).startsWith("timed out after 1s"));
    }

    @Test
    void variantsThatCannotRunHereAndGpusAreRefusedSayingWhatRuns() {
        assertThatThrownBy(() -> CodeSandbox.create(Variant.MODAL, SandboxConfig.defaults()))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("hosted service")
                .hasMessageContaining("chalk");
        assertThatThrownBy(() -> CodeSandbox.create(Variant.of("jupyter"), SandboxConfig.defaults()))
                .hasMessageContaining("connectJupyter");
        assertThatThrownBy(() -> CodeSandbox.create(
                        client, SandboxConfig.builder().gpu("1").build()))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("GPU");
    }
}
