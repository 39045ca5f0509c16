package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.RuntimeBehaviourTest;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;

/** The shared runtime behaviour on the docker runtime, with an engine on this host. */
@Tag("alone")
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
