package ai.chalk.compute.error;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.ClientCredentials;

/** The not-found suite over TCP, as a standalone server's client connects: a client credential exchanged for tokens. */
class TcpNotFoundEndToEndTest extends NotFoundEndToEndTest {

    @Override
    SandboxClient connect(ComputeServer running) {
        ClientCredentials.Created credential =
                running.authentication().credentials().create("sdk", "default");
        String target = "localhost:" + running.port().orElseThrow();
        return SandboxClient.builder()
                .target(target)
                .credentials(ChalkCredentials.ofClientCredentials(
                                credential.credential().id(), credential.secret())
                        .withApiServer("http://" + target))
                .build();
    }
}
