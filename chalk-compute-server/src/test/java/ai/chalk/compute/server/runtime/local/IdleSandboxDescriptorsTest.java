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

    private static final Duration SPARES_IDLE = Duration.ofSeconds(5);

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
        long before = settledDescriptors();

        List<LocalSandbox> idle = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            // the last two with network: their slirp4netns is the server's child too
            idle.add((LocalSandbox) runtime.start(i < 4 ? LocalTesting.spec() : withNetwork(LocalTesting.spec())));
        }
        List<LocalSandbox> used = idle.subList(0, 3);
        for (LocalSandbox sb : used) {
            runExecs(sb, "first");
            awaitSpares(sb, "the spare exec helpers the second exec started behind it and the later ones topped up");
        }
        // then no exec comes: the spares go with their exec groups, and six sandboxes hold nothing of the server
        Awaitility.await().atMost(SPARES_IDLE.plusSeconds(10)).untilAsserted(() -> {
            for (LocalSandbox sb : used) {
                assertThat(sb.spareExecs()).as("spare exec helpers kept").isZero();
                assertThat(execGroups(sb)).as("exec groups left").isEmpty();
            }
            assertThat(descriptors())
                    .as("the server's descriptors with six idle sandboxes (%d before them)", before)
                    .isLessThanOrEqualTo(before);
        });

        // an exec after that still runs (the direct path); the first two do as in a fresh sandbox, then spares come
        for (LocalSandbox sb : used) {
            assertThat(sh(sb, "echo once").ok().out()).isEqualTo("once\n");
            // none start behind it (they would, a moment later, if the sandbox still counted its earlier execs)
            Awaitility.await()
                    .during(Duration.ofMillis(500))
                    .atMost(Duration.ofSeconds(2))
                    .until(() -> sb.spareExecs() == 0);
            runExecs(sb, "again");
            awaitSpares(sb, "spares after more execs");
        }
        for (LocalSandbox sb : idle) {
            assertThat(sh(sb, "cat /proc/1/cmdline | tr '\\0' ' '").ok().out())
                    .as("each sandbox's init still runs")
                    .contains("sleep infinity");
            sb.terminate(Duration.ZERO);
        }
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> assertThat(descriptors()).isLessThanOrEqualTo(before));
    }

    private static void runExecs(RuntimeSandbox sb, String word) throws Exception {
        for (int i = 0; i < 3; i++) {
            assertThat(sh(sb, "echo " + word + " " + i).ok().out()).isEqualTo(word + " " + i + "\n");
        }
    }

    /** Waits for the spares an exec tops up behind it (once it is done, or a moment after it started). */
    private static void awaitSpares(LocalSandbox sb, String what) {
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(sb.spareExecs()).as(what).isEqualTo(SpareExecs.SPARES));
    }

    /** The sandbox's exec groups ({@code x<N>} in its {@code pids} group). */
    private static List<Path> execGroups(LocalSandbox sb) throws IOException {
        Path pids = sb.groups().flatMap(g -> g.dir("pids")).orElseThrow();
        try (Stream<Path> groups = Files.list(pids)) {
            return groups.filter(p -> p.getFileName().toString().matches("x[0-9]+"))
                    .toList();
        }
    }

    private static SandboxSpec withNetwork(SandboxSpec s) {
        return new SandboxSpec(s.id(), s.image(), s.env(), s.workdir(), s.limits(), true, s.entrypoint());
    }

    /** The descriptors this JVM holds once a passing one (a user namespace's holder's pipe, say) has gone. */
    private static long settledDescriptors() throws IOException {
        long[] last = {descriptors()};
        Awaitility.await()
                .pollInterval(Duration.ofMillis(300))
                .atMost(Duration.ofSeconds(10))
                .until(() -> {
                    long now = descriptors();
                    boolean same = now == last[0];
                    last[0] = now;
                    return same;
                });
        return last[0];
    }

    /**
     * The descriptors this JVM holds (the listing's own counts in each), but for the jars its class loaders open
     * once, the first time a class of theirs is needed.
     */
    private static long descriptors() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                        try {
                            return !Files.readSymbolicLink(fd).toString().endsWith(".jar");
                        } catch (IOException e) {
                            return false; // closed while listed
                        }
                    })
                    .count();
        }
    }
}
