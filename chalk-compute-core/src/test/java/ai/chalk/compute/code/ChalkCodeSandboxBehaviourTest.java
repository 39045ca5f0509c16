package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * The behaviours every variant has, on the {@code chalk} variant: sandboxes of a real server's local runtime, their
 * python3. What only chalk sandboxes do (snapshots, {@code fromId}, the artifact limit) is in {@link CodeSandboxTest}.
 */
class ChalkCodeSandboxBehaviourTest extends CodeSandboxBehaviourTest {

    ComputeServer server;
    SandboxClient client;

    @BeforeAll
    void startServer(@TempDir Path dataDir) throws Exception {
        server = ComputeServer.builder().dataDir(dataDir).build().start();
        client = SandboxClient.inProcess(server.inProcessName());
    }

    @AfterAll
    void stopServer() {
        closeSandbox();
        client.close();
        server.close();
    }

    @Override
    CodeSandbox create(SandboxConfig config) {
        return CodeSandbox.create(client, config);
    }
}
