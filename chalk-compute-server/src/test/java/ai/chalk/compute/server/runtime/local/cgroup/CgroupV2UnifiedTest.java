package ai.chalk.compute.server.runtime.local.cgroup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link CgroupV2} on a real unified hierarchy: a fresh group of {@code /sys/fs/cgroup} on a v2 host, of
 * {@code /sys/fs/cgroup/unified} on a hybrid one like these machines. There the limiting controllers are bound to the
 * v1 hierarchies, so the driver must name them as unavailable, but the core files (cgroup.procs, cgroup.freeze,
 * cgroup.events, cgroup.kill) and groups within groups are real.
 */
@Tag("alone")
class CgroupV2UnifiedTest extends CgroupDriverBehaviourTest {

    private Path own;

    @Override
    CgroupDriver newDriver() throws IOException {
        Path unified = Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers"))
                ? Path.of("/sys/fs/cgroup")
                : Path.of("/sys/fs/cgroup/unified");
        assumeTrue(Files.exists(unified.resolve("cgroup.procs")), "no cgroup2 mounted at " + unified);
        own = unified.resolve("chalk-cgroup-test-" + newId());
        Files.createDirectory(own);
        return CgroupV2.at(own, "k");
    }

    @Override
    void cleanUp() {
        CgroupFiles.removeTree(own, 5_000);
    }

    @Override
    boolean frozenByKernel(SandboxCgroup sandbox) {
        return V2Group.events(sandbox.dir("freezer").orElseThrow()).contains("frozen 1");
    }

    @Test
    void aControllerMissingHereIsNamedAndItsLimitLeftOutAsOnV1() throws IOException {
        assertThat(driver.version()).isEqualTo("cgroup v2");
        assertThat(driver.freezer()).isTrue();
        assertThat(driver.tracksExecs()).isTrue();
        List<String> available = Arrays.asList(
                CgroupFiles.read(own.resolve("cgroup.controllers")).split(" "));
        for (String controller : CgroupDriver.CONTROLLERS) {
            if (available.contains(controller)) {
                assertThat(driver.controllers()).contains(controller);
            } else {
                assertThat(driver.controllers()).doesNotContain(controller);
                assertThat(driver.problem())
                        .hasValueSatisfying(p -> assertThat(p)
                                .contains(controller + " is not available in " + own.resolve("cgroup.controllers")));
            }
        }
        // the sandbox is still made, without the limits that cannot be set (v1 does the same with an unmounted one)
        SandboxCgroup sb = driver.create(newId(), new ResourceLimits(Optional.of(500L), Optional.of(64L << 20)), 64);
        for (String controller : CgroupDriver.CONTROLLERS) {
            assertThat(sb.dir(controller).isPresent()).isEqualTo(driver.has(controller));
        }
        assertThat(sb.initProcsFiles())
                .containsExactly(sb.dir("freezer").orElseThrow().resolve("init/cgroup.procs"));
        sb.remove();
    }

    @Test
    void withoutCgroupKillTheGroupIsFrozenThenKilled() throws Exception {
        SandboxCgroup sb = driver.create(newId(), ResourceLimits.NONE, 64);
        ExecCgroup exec = sb.newExec();
        Process p = startIn(exec.procsFiles(), "(setsid sleep 4821 &); exec sleep 4822");
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> exec.group().procs().size() == 2);
        Path dir = exec.procsFiles().get(0).getParent();

        V2Group older = new V2Group(dir, false, true); // a kernel before 5.14: no cgroup.kill
        assertThat(older.killAll(5_000)).isTrue();

        assertThat(p.waitFor(5, TimeUnit.SECONDS)).isTrue();
        assertThat(V2Group.events(dir)).contains("frozen 0"); // thawed again, as found
        assertThat(older.removeIfEmpty()).isTrue();
    }
}
