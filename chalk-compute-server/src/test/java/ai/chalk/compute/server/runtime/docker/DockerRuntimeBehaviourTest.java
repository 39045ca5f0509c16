package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.RuntimeBehaviourTest;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;

/** The shared runtime behaviour on the docker runtime, with an engine on this host. */
class DockerRuntimeBehaviourTest extends RuntimeBehaviourTest {

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        return DockerTesting.runtime(state);
    }

    @Override
    protected Path writableLayer(RuntimeSandbox sandbox) {
        return DockerTesting.upperDir(sandbox);
    }
}
