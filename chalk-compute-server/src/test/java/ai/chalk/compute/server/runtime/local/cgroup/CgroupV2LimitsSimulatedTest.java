package ai.chalk.compute.server.runtime.local.cgroup;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cgroup v2 limit files, written into a temporary directory standing in for a group. Simulated because on these
 * machines the memory, pids and cpu controllers are bound to the v1 hierarchies, so the unified one
 * ({@code /sys/fs/cgroup/unified}) cannot hand them to any group; {@link CgroupV2UnifiedTest} covers what the real
 * unified hierarchy does here. The kernel's own parsing of the values is not exercised: only the file names and the
 * values the driver writes, which are the ones the cgroup v2 documentation gives.
 */
class CgroupV2LimitsSimulatedTest {

    private static final List<String> ALL = List.of("cpu", "memory", "pids");

    @TempDir
    Path group;

    @Test
    void cpuIsAQuotaPerPeriodMemoryForbidsSwapAndPidsIsTheMaximum() throws IOException {
        V2Limits.set(group, ALL, new ResourceLimits(Optional.of(500L), Optional.of(64L << 20)), 99);

        assertThat(read("cpu.max")).isEqualTo("50000 100000");
        assertThat(read("memory.max")).isEqualTo(Long.toString(64L << 20));
        assertThat(read("memory.swap.max")).isEqualTo("0");
        assertThat(read("pids.max")).isEqualTo("99");
    }

    @Test
    void aTinyCpuShareStillGetsTheSmallestQuotaV1Gives() throws IOException {
        V2Limits.set(group, ALL, new ResourceLimits(Optional.of(1L), Optional.empty()), 10);

        assertThat(read("cpu.max")).isEqualTo("1000 100000");
        assertThat(group.resolve("memory.max")).doesNotExist();
    }

    @Test
    void onlyTheFilesOfControllersInUseAreWritten() throws IOException {
        V2Limits.set(group, List.of("pids"), new ResourceLimits(Optional.of(500L), Optional.of(64L << 20)), 12);

        assertThat(group.resolve("cpu.max")).doesNotExist();
        assertThat(group.resolve("memory.max")).doesNotExist();
        assertThat(read("pids.max")).isEqualTo("12");
    }

    @Test
    void allSandboxesTogetherGetHalfTheHostsPidsAndThreeQuartersOfItsMemory() throws IOException {
        SandboxesCap.ofHost().writeV2(group, ALL);

        long hostPids = Math.min(
                Long.parseLong(
                        Files.readAllLines(Path.of("/proc/sys/kernel/pid_max")).get(0)),
                Long.parseLong(Files.readAllLines(Path.of("/proc/sys/kernel/threads-max"))
                        .get(0)));
        assertThat(read("pids.max")).isEqualTo(Long.toString(Math.max(64, hostPids / 2)));
        assertThat(Long.parseLong(read("memory.max")))
                .isEqualTo(CgroupFiles.memoryForAllSandboxes())
                .isPositive();
    }

    @Test
    void aSandboxGroupHoldsTheLimitsAndItsProcessesLiveInLeavesBelowIt() throws IOException {
        Path base = group.resolve("chalk-compute/k");
        CgroupV2 driver = new CgroupV2(base, ALL, true, true, null, null);

        SandboxCgroup sb = driver.create("sb", new ResourceLimits(Optional.of(2000L), Optional.of(1L << 30)), 256);

        Path dir = base.resolve("sb");
        // a base that is not there yet is made and hands the controllers down (a plain file keeps the last write)
        assertThat(Files.readString(base.resolve("cgroup.subtree_control"))).isEqualTo("+pids");
        assertThat(Files.readString(base.resolve("pids.max"))).isNotBlank();
        assertThat(Files.readString(dir.resolve("cpu.max"))).isEqualTo("200000 100000");
        assertThat(Files.readString(dir.resolve("memory.max"))).isEqualTo(Long.toString(1L << 30));
        assertThat(Files.readString(dir.resolve("pids.max"))).isEqualTo("256");
        assertThat(sb.dir("memory")).contains(dir);
        assertThat(sb.initProcsFiles()).containsExactly(dir.resolve("init/cgroup.procs"));
        assertThat(sb.newExec().procsFiles()).containsExactly(dir.resolve("x1/cgroup.procs"));
        assertThat(sb.newExec().procsFiles()).containsExactly(dir.resolve("x2/cgroup.procs"));
        assertThat(driver.leftoverIds()).containsExactly("sb");
    }

    private String read(String file) throws IOException {
        return CgroupFiles.read(group.resolve(file));
    }
}
