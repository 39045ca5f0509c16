package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeBehaviourTest;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;

/**
 * The shared runtime behaviour on the docker runtime as it works with an engine on another machine
 * ({@code DOCKER_HOST=tcp://...}): no host pids, so signals and killTree are {@code kill} execs in the container
 * and exits are known from the engine alone.
 */
@Tag("alone")
class DockerRemoteBehaviourTest extends RuntimeBehaviourTest {

    @Override
    protected SandboxRuntime createRuntime(Path state) {
        return DockerRuntime.builder(state)
                .defaultImage(DockerTesting.image())
                .useHost(false)
                .build();
    }

    @Override
    protected Path writableLayer(RuntimeSandbox sandbox) {
        assertThat(((DockerSandbox) sandbox).host()).isEmpty();
        return DockerTesting.upperDir(sandbox);
    }

    /** Without host pids, the engine's own end of the stream (two seconds after the exit) is all there is. */
    @Override
    protected Duration exitLatencyWithHeldOutput() {
        return Duration.ofSeconds(3);
    }
}
