package ai.chalk.compute.sandbox;

import ai.chalk.compute.server.ComputeServer;

/** The end-to-end suite over TCP (plaintext HTTP/2), connecting the way users do. */
class TcpSandboxTest extends SandboxEndToEndTest {

    @Override
    SandboxClient connect(ComputeServer server) {
        return SandboxClient.connect("localhost:" + server.port().orElseThrow());
    }
}
