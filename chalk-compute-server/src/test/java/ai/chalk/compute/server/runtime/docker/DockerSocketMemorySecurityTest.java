package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.SocketBufferHoard;
import ai.chalk.compute.server.runtime.network.TcpMemory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a container's sockets hold in the kernel counts against the sandbox's memory, not against the host's one pool
 * of TCP memory ({@code net.ipv4.tcp_mem}): the attack of the local runtime's {@code SocketMemorySecurityTest}, in a
 * Docker sandbox.
 */
class DockerSocketMemorySecurityTest {

    @TempDir
    Path state;

    DockerRuntime runtime;

    @BeforeEach
    void start() {
        runtime = DockerRuntime.builder(state)
                .defaultImage(DockerTesting.debianImage())
                .build();
    }

    @AfterEach
    void stop() {
        runtime.close();
    }

    /**
     * 200 connections on the container's own loopback, written into and never read. On cgroup v1 the engine asks the
     * kernel to charge their buffers to no group: a container with 64 MiB of memory held 600 MB of the host's TCP
     * memory.
     */
    @Test
    void aContainersSocketBuffersCountAgainstItsMemory() throws Exception {
        long memory = 64L << 20;
        RuntimeSandbox sb = runtime.start(new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                new ResourceLimits(Optional.empty(), Optional.of(memory)),
                false,
                List.of()));
        String out = RuntimeTesting.sh(sb, SocketBufferHoard.HOARD + "200 600000000")
                .ok()
                .out();
        assertThat(SocketBufferHoard.held(out, 200)).as(out).isLessThanOrEqualTo(memory);
        assertThat(RuntimeTesting.sh(sb, "echo alive").ok().out()).isEqualTo("alive\n");
        // set by the engine as it made the container, before the image's first process ran
        assertThat(DockerTesting.docker(
                                "inspect",
                                "--format",
                                "{{.HostConfig.KernelMemoryTCP}}",
                                ((DockerSandbox) sb).containerId())
                        .output()
                        .trim())
                .isEqualTo(Long.toString(memory));
        sb.terminate(Duration.ZERO);
    }

    /** A container with no memory limit holds no more than a sandbox's share of the host's TCP memory. */
    @Test
    void aContainerWithoutAMemoryLimitHoldsOnlyAShareOfTheHostsTcpMemory() throws Exception {
        RuntimeSandbox sb = runtime.start(RuntimeTesting.spec());
        long share = TcpMemory.forOneSandbox(Long.MAX_VALUE);
        String out = RuntimeTesting.sh(sb, SocketBufferHoard.HOARD + "400 1500000000")
                .ok()
                .out();
        assertThat(SocketBufferHoard.held(out, 400)).as(out).isLessThanOrEqualTo(share);
        sb.terminate(Duration.ZERO);
    }
}
