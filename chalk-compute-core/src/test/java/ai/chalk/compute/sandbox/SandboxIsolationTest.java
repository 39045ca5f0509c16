package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The isolation claims as a user sees them, probed from inside sandboxes through the client
 * (the local runtime's own tests probe more, below the gRPC layer).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SandboxIsolationTest {

    Path dataDir;
    ComputeServer server;
    SandboxClient client;

    @BeforeAll
    void start(@TempDir Path dataDir) throws Exception {
        this.dataDir = dataDir;
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
        assertThat(server.isolation().isolated())
                .as("this host has bubblewrap or unshare")
                .isTrue();
    }

    @AfterAll
    void stop() {
        client.close();
        server.close();
    }

    @Test
    void aSandboxSeesOnlyItsOwnProcesses() {
        Sandbox sandbox = client.create();
        String pids = sandbox.exec("sh", "-c", "ls /proc | grep -E '^[0-9]+$'").stdoutText();
        assertThat(pids.lines().map(Long::parseLong))
                .doesNotContain(ProcessHandle.current().pid())
                .hasSizeLessThan(10);
        sandbox.terminate();
    }

    @Test
    void hostHomesTheServersDataAndHostTmpAreInvisible() throws Exception {
        Path secret = Files.writeString(dataDir.resolve("server-secret.txt"), "do not read");
        Sandbox sandbox = client.create();
        ExecResult probe = sandbox.exec("sh", "-c", "ls -A /home /root /tmp; cat " + secret + "; ls " + dataDir);
        assertThat(probe.stdoutText()).doesNotContain("do not read").doesNotContain("server-secret");
        assertThat(sandbox.exec("ls", "-A", "/tmp").stdoutText()).isEmpty();
        assertThat(sandbox.exec("sh", "-c", "touch /usr/x || echo refused").stdoutText())
                .contains("refused");
        sandbox.terminate();
    }

    @Test
    void noNetworkInterfaceButLoopback() {
        Sandbox sandbox = client.create();
        assertThat(sandbox.exec("sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
                        .stdout())
                .containsExactly("lo");
        sandbox.terminate();
    }

    @Test
    void filesArePrivateToASandboxAndGoneAfterTerminate() {
        Sandbox first = client.create();
        Sandbox second = client.create();
        assertThat(first.exec("sh", "-c", "echo mine > /workspace/note && cat /workspace/note")
                        .stdoutText())
                .isEqualTo("mine\n");
        assertThat(second.exec("cat", "/workspace/note").success()).isFalse();
        first.terminate();
        try (var layers = Files.walk(dataDir)) {
            assertThat(layers.filter(p -> p.getFileName().toString().equals("note")))
                    .isEmpty();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        second.terminate();
    }
}
