package ai.chalk.compute.sandbox;

import ai.chalk.compute.server.ComputeServer;

/** The sandbox lifecycle suite through gRPC's in-process transport. */
class InProcessSandboxLifecycleTest extends SandboxLifecycleEndToEndTest {

    @Override
    SandboxClient connect(ComputeServer server) {
        return SandboxClient.inProcess(server.inProcessName());
    }
}
