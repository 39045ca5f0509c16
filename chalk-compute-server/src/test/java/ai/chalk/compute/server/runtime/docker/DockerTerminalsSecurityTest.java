package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.Sysctl;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A container holds at most {@link SandboxDevices#PTYS} of the host's one pool of pseudo-terminals
 * ({@code kernel.pty.max}): the attack of the local runtime's terminal tests, in a Docker sandbox. With the engine's own
 * {@code devpts}, which has no {@code max}, one container opening {@code /dev/ptmx} in a loop took 3,071 terminals, all
 * the pool leaves to anyone but the host's root, and no other container, sandbox or login got one.
 */
class DockerTerminalsSecurityTest {

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
