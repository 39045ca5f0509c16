package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.SocketBufferHoard;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.Sysctl;
import ai.chalk.compute.server.runtime.network.TcpMemory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a container takes of the host's pools shared by every container and sandbox, the attacks of the local runtime's
 * tests in a Docker sandbox: its sockets' buffers count against the sandbox's memory, not against the host's one pool
 * of TCP memory ({@code net.ipv4.tcp_mem}); and it holds at most {@link SandboxDevices#PTYS} of the host's one pool of
 * pseudo-terminals ({@code kernel.pty.max}). With the engine's own {@code devpts}, which has no {@code max}, one
 * container opening {@code /dev/ptmx} in a loop took 3,071 terminals, all the pool leaves to anyone but the host's
 * root, and no other container, sandbox or login got one.
 */
@Tag("alone")
class DockerHostPoolsSecurityTest {

    /** Opens {@code /dev/ptmx} until refused (at most 5,000), prints how many it holds and why it stopped, holds them. */
    static final String HOARD =
            "perl -e 'my @t; while (@t < 5000 && open(my $f, \"+<\", \"/dev/ptmx\")) { push @t, $f }"
                    + " print \"terminals: \", scalar(@t), \" $!\\n\"; close STDOUT; sleep 600'";

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
        assertThat(SocketBufferHoard.held(out, 200)).as(out).isLessThanOrEqualTo(SocketBufferHoard.bound(memory));
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
        assertThat(SocketBufferHoard.held(out, 400)).as(out).isLessThanOrEqualTo(SocketBufferHoard.bound(share));
        sb.terminate(Duration.ZERO);
    }

    @Test
    void aContainerHoldsAFewTerminalsOfTheHostAndAnotherStillGetsItsOwn() throws Exception {
        long before = Sysctl.read(Path.of("/proc/sys/kernel/pty/nr")).orElseThrow();
        RuntimeSandbox hoarder = runtime.start(RuntimeTesting.spec());
        RuntimeSandbox other = runtime.start(RuntimeTesting.spec());
        RuntimeProcess hoard = hoarder.exec(RuntimeTesting.sh(HOARD));
        String line = RuntimeTesting.readLine(hoard.stdout());
        assertThat(line).isEqualTo("terminals: " + SandboxDevices.PTYS + " No space left on device");
        // the host's pool lost the hoarder's terminals only, while it holds them (and a few that something else on
        // the host may have opened meanwhile: 3,071 went before)
        assertThat(Sysctl.read(Path.of("/proc/sys/kernel/pty/nr")).orElseThrow())
                .isLessThanOrEqualTo(before + SandboxDevices.PTYS + 16);

        // the other container has its own, and a terminal for an exec: the engine makes it in the container's devpts
        assertThat(RuntimeTesting.sh(other, "perl -e 'open(my $f, \"+<\", \"/dev/ptmx\") or die $!; print \"ok\\n\"'")
                        .ok()
                        .out())
                .isEqualTo("ok\n");
        RuntimeProcess tty = other.exec(new ProcessSpec(
                "sh",
                List.of("-c", "tty; grep ' /dev/pts ' /proc/self/mountinfo"),
                Optional.empty(),
                Map.of(),
                Optional.of(new ProcessSpec.TerminalSize(80, 24))));
        String out = new String(tty.stdout().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(tty.onExit().get().exitCode()).hasValue(0);
        assertThat(out).contains("/dev/pts/0").contains("devpts").contains("max=" + SandboxDevices.PTYS);

        // the host's mounts of the instances are gone once the containers started: the containers keep theirs
        assertThat(Files.readString(Path.of("/proc/self/mountinfo"))).doesNotContain(state.toRealPath() + "/terminals");
        try (var left = Files.list(state.resolve("terminals"))) {
            assertThat(left).isEmpty();
        }
        // while a container starts its instance is reachable there, and its ptmx opens for anyone: the server's alone
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(state.resolve("terminals"))))
                .isEqualTo("rwx------");
        hoarder.terminate(Duration.ZERO);
        other.terminate(Duration.ZERO);
    }
}
