package ai.chalk.compute.server.runtime.docker;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeTesting;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxesCap;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a tenant's own limits allow against what all of a server's Docker sandboxes may hold together. A tenant chooses
 * its sandbox's memory (up to a pebibyte), and every container had only its own limits: a few sandboxes asking for much
 * could take the host's memory and process ids. The containers now share a parent group capped as the local runtime's
 * sandboxes are (three quarters of the host's memory, half its process ids); here the cap is made small to show it.
 */
class DockerSandboxesTogetherSecurityTest {

    private static final long CAP_MEMORY = 192L << 20;
    private static final long CAP_PIDS = 100;

    /** Forks up to 60 children that stay, sleeping, and prints how many it got. */
    private static final String FORK_60 = "perl -e 'my $n = 0; for (1 .. 60) { my $p = fork(); last unless defined $p;"
            + " if ($p == 0) { close STDOUT; close STDERR; sleep 120; exit } $n++ } print \"$n\\n\"'";

    @TempDir
    Path state;

    @Test
    void aSandboxAskingForMoreMemoryThanAllSandboxesMayHoldGetsOnlyTheirs() throws Exception {
        try (DockerRuntime runtime = capped()) {
            RuntimeSandbox sb = runtime.start(spec(Optional.of(1L << 30)));
            // its own group lies in the server's, which holds the cap
            String group = RuntimeTesting.sh(sb, "grep ':memory:' /proc/self/cgroup | cut -d: -f3")
                    .ok()
                    .out()
                    .trim();
            assertThat(group).startsWith("/chalk-compute-" + runtime.key() + "/");
            assertThat(Files.readString(memoryGroup(runtime).resolve("memory.limit_in_bytes"))
                            .trim())
                    .isEqualTo(Long.toString(CAP_MEMORY));

            // 300 MB touched at once: within the tenant's 1 GiB, past what all sandboxes may hold
            RuntimeTesting.Run big = RuntimeTesting.sh(sb, "dd if=/dev/zero of=/dev/null bs=300M count=1");
            assertThat(big.status()).as(big.err()).isNotEqualTo(ExitStatus.exited(0));
            RuntimeTesting.Run small = RuntimeTesting.sh(sb, "dd if=/dev/zero of=/dev/null bs=100M count=1");
            assertThat(small.status()).as(small.err()).isEqualTo(ExitStatus.exited(0));
            sb.terminate(Duration.ZERO);
        }
    }

    @Test
    void twoSandboxesShareTheProcessesAllSandboxesMayHaveAndTheGroupGoesWithTheServer() throws Exception {
        Path memoryGroup;
        Path pidsGroup;
        try (DockerRuntime runtime = capped()) {
            memoryGroup = memoryGroup(runtime);
            pidsGroup = Path.of("/sys/fs/cgroup/pids/chalk-compute-" + runtime.key());
            assertThat(Files.readString(pidsGroup.resolve("pids.max")).trim()).isEqualTo(Long.toString(CAP_PIDS));
            RuntimeSandbox first = runtime.start(spec(Optional.empty()));
            RuntimeSandbox second = runtime.start(spec(Optional.empty()));

            int firstGot = forked(first);
            int secondGot = forked(second);
            // each alone could have 4096; together they stay within the cap, the init and shells of both included
            assertThat(firstGot).isEqualTo(60);
            assertThat(secondGot).isLessThan(40);
            assertThat(firstGot + secondGot).isLessThanOrEqualTo((int) CAP_PIDS);
            first.terminate(Duration.ZERO);
            second.terminate(Duration.ZERO);
        }
        assertThat(memoryGroup).doesNotExist();
        assertThat(pidsGroup).doesNotExist();
        assertThat(Path.of("/sys/fs/cgroup/cpu/" + memoryGroup.getFileName())).doesNotExist();
    }

    private DockerRuntime capped() {
        return DockerRuntime.builder(state)
                .defaultImage(DockerTesting.debianImage())
                .sandboxesCap(new SandboxesCap(CAP_MEMORY, CAP_PIDS))
                .build();
    }

    private static SandboxSpec spec(Optional<Long> memory) {
        return new SandboxSpec(
                RuntimeTesting.newId(),
                "",
                Map.of(),
                "/workspace",
                new ResourceLimits(Optional.empty(), memory),
                false,
                List.of());
    }

    private static Path memoryGroup(DockerRuntime runtime) {
        return Path.of("/sys/fs/cgroup/memory/chalk-compute-" + runtime.key());
    }

    /** How many children a sandbox got of the 60 it forked (they stay, sleeping). */
    private static int forked(RuntimeSandbox sb) throws Exception {
        String out = RuntimeTesting.sh(sb, FORK_60).ok().out();
        return Integer.parseInt(out.lines().findFirst().orElseThrow().trim());
    }
}
