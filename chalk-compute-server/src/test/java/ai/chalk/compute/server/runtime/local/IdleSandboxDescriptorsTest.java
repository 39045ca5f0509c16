package ai.chalk.compute.server.runtime.local;

import static ai.chalk.compute.server.runtime.local.LocalTesting.sh;
import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An idle sandbox holds no descriptor of the server, in both isolation modes. Every process the server starts
 * inherits each descriptor it holds and closes them one by one, so that descriptors kept per sandbox made every create
 * and exec slower with each sandbox alive: with 1,000 idle sandboxes keeping two pipes each (their init's status and
 * stderr), each process start cost about 6 ms more of the kernel's time, creates ran at 35/s instead of 51/s and an
 * exec took 1.7 times as long as with one sandbox alive. Spare exec helpers (three pipes each) are let go of once no
 * exec has come for a while, and started again by the next execs.
 */
@Tag("alone")
class IdleSandboxDescriptorsTest {

    private static final Duration SPARES_IDLE = Duration.ofSeconds(2);

    @RegisterExtension
    final ModeRuntimes runtimes = new ModeRuntimes();

    @ParameterizedTest
    @ValueSource(strings = {"bubblewrap", "unshare"})
    void idleSandboxesHoldNoDescriptorOfTheServer(String mode) throws Exception {
        LocalRuntime runtime = runtimes.start(mode, b -> b.spareExecsIdle(SPARES_IDLE));
        // whatever the runtime opens once (its first sandbox's) is not a sandbox's
        RuntimeSandbox first = runtime.start(LocalTesting.spec());
        assertThat(sh(first, "echo up").ok().out()).isEqualTo("up\n");
        first.terminate(Duration.ZERO);
        long before = settledPipes();

        List<RuntimeSandbox> idle = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            // the last two with network: their slirp4netns is the server's child too
            idle.add(runtime.start(i < 4 ? LocalTesting.spec() : withNetwork(LocalTesting.spec())));
        }
        List<RuntimeSandbox> used = idle.subList(0, 3);
        for (RuntimeSandbox sb : used) {
            for (int i = 0; i < 3; i++) {
                assertThat(sh(sb, "echo " + i).ok().out()).isEqualTo(i + "\n");
            }
        }
        // the used ones start their spare helpers: two each, three pipes each
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(pipes())
                        .as("the server's pipes with three sandboxes' spare exec helpers ready")
                        .isGreaterThanOrEqualTo(before + 3 * SpareExecs.SPARES * 3));
        // then no exec comes: the spares go, and six sandboxes hold nothing of the server
        Awaitility.await()
                .atMost(SPARES_IDLE.plusSeconds(10))
                .untilAsserted(() -> assertThat(pipes())
                        .as("the server's pipes with six idle sandboxes (%d before them)", before)
                        .isLessThanOrEqualTo(before));

        // an exec after that still runs (the direct path), and the next ones bring the spares back
        for (RuntimeSandbox sb : used) {
            for (int i = 0; i < 3; i++) {
                assertThat(sh(sb, "echo again " + i).ok().out()).isEqualTo("again " + i + "\n");
            }
        }
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(pipes())
                        .as("the server's pipes once execs come again")
                        .isGreaterThanOrEqualTo(before + 3 * SpareExecs.SPARES * 3));
        for (RuntimeSandbox sb : idle) {
            assertThat(sh(sb, "cat /proc/1/cmdline | tr '\\0' ' '").ok().out())
                    .as("each sandbox's init still runs")
                    .contains("sleep infinity");
            sb.terminate(Duration.ZERO);
        }
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(pipes()).isLessThanOrEqualTo(before));
    }

    private static SandboxSpec withNetwork(SandboxSpec s) {
        return new SandboxSpec(s.id(), s.image(), s.env(), s.workdir(), s.limits(), true, s.entrypoint());
    }

    /** The pipes this JVM holds once a passing one (a user namespace's holder, say) has been let go of. */
    private static long settledPipes() throws IOException {
        long[] last = {pipes()};
        Awaitility.await()
                .pollInterval(Duration.ofMillis(300))
                .atMost(Duration.ofSeconds(10))
                .until(() -> {
                    long now = pipes();
                    boolean same = now == last[0];
                    last[0] = now;
                    return same;
                });
        return last[0];
    }

    private static long pipes() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                        try {
                            return Files.readSymbolicLink(fd).toString().startsWith("pipe:");
                        } catch (IOException e) {
                            return false; // closed while listed
                        }
                    })
                    .count();
        }
    }
}
