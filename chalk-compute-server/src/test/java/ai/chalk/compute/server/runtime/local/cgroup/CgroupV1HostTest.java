package ai.chalk.compute.server.runtime.local.cgroup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@link CgroupV1} on this host's v1 hierarchies, as detection chooses it on a v1 or hybrid host. */
class CgroupV1HostTest extends CgroupDriverBehaviourTest {

    @Override
    CgroupDriver newDriver() {
        CgroupDriver d = CgroupDriver.detect("cgtest" + ProcessHandle.current().pid());
        assumeTrue(d instanceof CgroupV1, "this host drives cgroup v2, not v1: " + d);
        return d;
    }

    @Override
    boolean frozenByKernel(SandboxCgroup sandbox) throws IOException {
        return CgroupFiles.read(sandbox.dir("freezer").orElseThrow().resolve("freezer.state"))
                .equals("FROZEN");
    }

    @Test
    void limitsAreWrittenToEachControllersHierarchy() throws IOException {
        assertThat(driver.version()).isEqualTo("cgroup v1");
        assertThat(driver.controllers()).containsExactly("cpu", "memory", "pids");
        SandboxCgroup sb = driver.create(newId(), new ResourceLimits(Optional.of(250L), Optional.of(32L << 20)), 77);
        Path cpu = sb.dir("cpu").orElseThrow();
        assertThat(CgroupFiles.read(cpu.resolve("cpu.cfs_quota_us"))).isEqualTo("25000");
        assertThat(CgroupFiles.read(sb.dir("memory").orElseThrow().resolve("memory.limit_in_bytes")))
                .isEqualTo(Long.toString(32L << 20));
        assertThat(CgroupFiles.read(sb.dir("pids").orElseThrow().resolve("pids.max")))
                .isEqualTo("77");
        // the init joins every hierarchy, in the pids one a group of its own
        assertThat(sb.initProcsFiles())
                .hasSize(4)
                .contains(sb.dir("pids").orElseThrow().resolve("init/cgroup.procs"));
        sb.remove();
    }
}
