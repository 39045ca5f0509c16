package ai.chalk.compute.sandbox;

import ai.chalk.compute.server.ComputeServer;

/** The end-to-end suite through gRPC's in-process transport. */
class InProcessSandboxTest extends SandboxEndToEndTest {

    @Override
    SandboxClient connect(ComputeServer server) {
        return SandboxClient.inProcess(server.inProcessName());
    }
}
