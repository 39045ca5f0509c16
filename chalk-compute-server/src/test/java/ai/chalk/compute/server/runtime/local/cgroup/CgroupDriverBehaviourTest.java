package ai.chalk.compute.server.runtime.local.cgroup;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every {@link CgroupDriver} does with real processes in real groups: joining, freezing, killing what left the
 * process tree, and removing; run against each version this host can drive.
 */
abstract class CgroupDriverBehaviourTest {

    private static final AtomicInteger IDS = new AtomicInteger();

    @TempDir
    Path tmp;

    CgroupDriver driver;
    private final List<Process> started = new ArrayList<>();

    /** A driver with a base of its own, for this test only. */
    abstract CgroupDriver newDriver() throws IOException;

    /** Whether the kernel says the sandbox's group is frozen, in this version's words. */
    abstract boolean frozenByKernel(SandboxCgroup sandbox) throws IOException;

    /** Removes what {@link #newDriver} made beyond the base. */
    void cleanUp() {}

    @BeforeEach
    void setUp() throws IOException {
        driver = newDriver();
        assertThat(driver.any()).as("groups usable: %s", driver.problem()).isTrue();
    }

    @AfterEach
    void tearDown() {
        started.forEach(Process::destroyForcibly);
        driver.leftoverIds().forEach(driver::removeSandbox);
        driver.removeBaseIfEmpty();
        cleanUp();
    }

    static String newId() {
        return "cg" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    /** Starts {@code script} in a shell that first writes itself into each of {@code procsFiles}. */
    Process startIn(List<Path> procsFiles, String script) throws IOException {
        StringBuilder s = new StringBuilder();
        for (Path f : procsFiles) {
            s.append("echo $$ > ").append(f).append(" && ");
        }
        s.append(script);
        Process p = new ProcessBuilder("/bin/sh", "-c", s.toString())
                .redirectErrorStream(true)
                .start();
        started.add(p);
        return p;
    }

    @Test
    void anExecsProcessesAreInItsOwnGroupAndInTheSandboxs() throws Exception {
        SandboxCgroup sb = driver.create(newId(), ResourceLimits.NONE, 64);
        ExecCgroup exec = sb.newExec();
        Process p = startIn(exec.procsFiles(), "exec sleep 4811");
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> exec.group().procs().contains(p.pid()));
        assertThat(sb.allProcs()).contains(p.pid());
        assertThat(sb.processGroup().orElseThrow().procs()).contains(p.pid());
    }

    @Test
    void freezeStopsEveryProcessUntilThaw() throws Exception {
        SandboxCgroup sb = driver.create(newId(), ResourceLimits.NONE, 64);
        Path out = tmp.resolve("out");
        Process p = startIn(sb.newExec().procsFiles(), "while :; do echo x >> " + out + "; sleep 0.02; done");
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.exists(out) && Files.size(out) > 10);

        sb.freeze(10_000);
        assertThat(frozenByKernel(sb)).isTrue();
        long size = Files.size(out);
        Thread.sleep(300);
        assertThat(Files.size(out)).isEqualTo(size);
        assertThat(p.isAlive()).isTrue();

        sb.thaw();
        assertThat(frozenByKernel(sb)).isFalse();
        Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> Files.size(out) > size);
    }

    @Test
    void killAllReachesDaemonsThatLeftTheProcessTree() throws Exception {
        SandboxCgroup sb = driver.create(newId(), ResourceLimits.NONE, 64);
        ExecCgroup exec = sb.newExec();
        Process p = startIn(exec.procsFiles(), "(setsid sleep 4812 &); exec sleep 4813");
        ProcessGroup group = exec.group();
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> group.procs().size() == 2);
        long daemon =
                group.procs().stream().filter(pid -> pid != p.pid()).findFirst().orElseThrow();
        assertThat(ProcessHandle.of(daemon).flatMap(ProcessHandle::parent).map(ProcessHandle::pid))
                .isNotEqualTo(java.util.Optional.of(p.pid())); // re-parented: the process tree no longer leads to it

        assertThat(group.killAll(5_000)).isTrue();
        assertThat(p.waitFor(5, TimeUnit.SECONDS)).isTrue();
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> ProcessHandle.of(daemon).isEmpty());
        assertThat(group.removeIfEmpty()).isTrue();
        assertThat(group.procs()).isEmpty();
    }

    @Test
    void removeKillsWhatIsLeftEvenFrozenAndDeletesTheGroups() throws Exception {
        String id = newId();
        SandboxCgroup sb = driver.create(id, ResourceLimits.NONE, 64);
        Process init = startIn(sb.initProcsFiles(), "exec sleep 4814");
        Process exec = startIn(sb.newExec().procsFiles(), "exec sleep 4815");
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> sb.allProcs().size() == 2);
        if (sb.hasFreezer()) {
            sb.freeze(10_000);
        }
        List<Path> dirs =
                driver.controllers().stream().map(c -> sb.dir(c).orElseThrow()).toList();

        sb.remove();

        assertThat(init.waitFor(5, TimeUnit.SECONDS)).isTrue();
        assertThat(exec.waitFor(5, TimeUnit.SECONDS)).isTrue();
        assertThat(dirs).allMatch(d -> !Files.exists(d));
        assertThat(driver.leftoverIds()).doesNotContain(id);
    }

    @Test
    void leftoversOfAnEarlierSandboxAreFoundAndRemoved() throws Exception {
        String id = newId();
        SandboxCgroup old = driver.create(id, ResourceLimits.NONE, 64);
        Process stray = startIn(old.initProcsFiles(), "exec sleep 4816");
        Awaitility.await()
                .atMost(Duration.ofSeconds(5))
                .until(() -> old.allProcs().contains(stray.pid()));
        assertThat(driver.leftoverIds()).contains(id);

        driver.removeSandbox(id);

        assertThat(stray.waitFor(5, TimeUnit.SECONDS)).isTrue();
        assertThat(driver.leftoverIds()).doesNotContain(id);
        // and a sandbox of the same id can be made again
        driver.create(id, ResourceLimits.NONE, 64).remove();
    }
}
