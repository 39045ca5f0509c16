package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.RuntimeBehaviourTest;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;

/**
 * The shared runtime behaviour on the docker runtime with a Debian image, whose {@code /bin/sh} is dash rather than
 * busybox's ash: the exec wrapper and, as with an engine on another machine (no host pids), the in-container
 * {@code kill} scripts must work with both.
 */
@Tag("alone")
class DockerDebianBehaviourTest extends RuntimeBehaviourTest {

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        return DockerRuntime.builder(state)
                .defaultImage(DockerTesting.debianImage())
                .useHost(false)
                .build();
    }

    @Override
    protected Path writableLayer(RuntimeSandbox sandbox) {
        return DockerTesting.upperDir(sandbox);
    }

    @Override
    protected Duration exitLatencyWithHeldOutput() {
        return Duration.ofSeconds(3);
    }
}
