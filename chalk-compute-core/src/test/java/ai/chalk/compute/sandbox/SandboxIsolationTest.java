package ai.chalk.compute.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.ComputeServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
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
        assertThat(filesNamed(dataDir, "note")).isEmpty();
        second.terminate();
    }

    /**
     * Files called {@code name} under {@code root}, walked while the server works there: the pool of sandboxes
     * started ahead makes and removes directories meanwhile, and one that vanishes mid-walk is skipped, not an error.
     */
    private static List<Path> filesNamed(Path root, String name) {
        List<Path> found = new ArrayList<>();
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) {
                    if (file.getFileName().toString().equals(name)) {
                        found.add(file);
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) {
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return found;
    }
}
