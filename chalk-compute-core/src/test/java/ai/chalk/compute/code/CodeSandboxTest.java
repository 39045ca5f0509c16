package ai.chalk.compute.code;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
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
 * python3. What only chalk sandboxes do (charts and the artifact limit, a sandbox gone, snapshots, {@code fromId}) is
 * here; what every variant does is {@link CodeSandboxBehaviourTest}'s, run on chalk by
 * {@link ChalkCodeSandboxBehaviourTest}.
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
    void aSnapshotStartsANewSandboxWithTheFilesOutsideTheWorkingDirectoryToo() {
        sandbox.runCode("open('/tmp/setup.txt', 'w').write('ready')");
        CodeSnapshot snapshot = sandbox.createSnapshot("my-setup");
        try (CodeSandbox restored = CodeSandbox.create(
                client, SandboxConfig.builder().snapshot(snapshot.id()).build())) {
            assertThat(restored.runCode("open('/tmp/setup.txt').read()").text()).isEqualTo("'ready'");
            // the interpreter's file went with the restore
            assertThat(restored.runCode("import os\nos.path.exists('/tmp/.chalk-code-snapshot')")
                            .text())
                    .isEqualTo("False");
        } finally {
            snapshot.delete();
        }
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
        for (Variant hosted : List.of(Variant.MODAL, Variant.COLAB, Variant.DATALAYER)) {
            assertThatThrownBy(() -> CodeSandbox.create(hosted, SandboxConfig.defaults()))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("variant " + hosted.label() + " is a hosted service")
                    .hasMessageContaining("chalk (")
                    .hasMessageContaining("docker (")
                    .hasMessageContaining("eval (")
                    .hasMessageContaining("jupyter (");
        }
        assertThatThrownBy(() -> Variant.of("monty")).hasMessageContaining("eval (");
        assertThatThrownBy(() -> CodeSandbox.create(Variant.of("jupyter"), SandboxConfig.defaults()))
                .hasMessageContaining("connectJupyter");
        assertThatThrownBy(() -> CodeSandbox.create(
                        client, SandboxConfig.builder().gpu("1").build()))
                .isInstanceOf(FailedPreconditionException.class)
                .hasMessageContaining("GPU");
    }

    @Test
    void theDockerVariantWithoutDockerJavaNamesTheDependenciesToAdd() {
        // this class path as an application without docker-java sees it
        ClassLoader withoutDockerJava = new ClassLoader(CodeSandbox.class.getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.startsWith("com.github.dockerjava.")) {
                    throw new ClassNotFoundException(name);
                }
                return super.loadClass(name, resolve);
            }
        };
        assertThatThrownBy(() -> CodeSandbox.requireDockerJava(withoutDockerJava))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("com.github.docker-java:docker-java-core")
                .hasMessageContaining("com.github.docker-java:docker-java-transport-httpclient5")
                .hasMessageContaining("chalk-compute-bom")
                .hasMessageContaining("eval (");
        // with it, nothing to say
        CodeSandbox.requireDockerJava(CodeSandbox.class.getClassLoader());
    }
}
