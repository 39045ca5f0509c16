package ai.chalk.compute.sandbox;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;

/** The sandbox lifecycle suite over TCP, with a client credential of the server exchanged for tokens. */
class TcpSandboxLifecycleTest extends SandboxLifecycleEndToEndTest {

    @Override
    SandboxClient connect(ComputeServer server) {
        ClientCredentials.Created credential =
                server.authentication().credentials().create("sdk", "default");
        String target = "localhost:" + server.port().orElseThrow();
        return SandboxClient.builder()
                .target(target)
                .credentials(ChalkCredentials.ofClientCredentials(
                                credential.credential().id(), credential.secret())
                        .withApiServer("http://" + target))
                .build();
    }
}
