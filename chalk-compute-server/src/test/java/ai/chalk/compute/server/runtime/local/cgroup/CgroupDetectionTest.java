package ai.chalk.compute.server.runtime.local.cgroup;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.server.runtime.local.cgroup.CgroupDetection.Version;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which cgroup version is driven, from the mounts and groups a process sees (lines as the kernel writes them). */
class CgroupDetectionTest {

    /** These machines: v1 controllers under a tmpfs at /sys/fs/cgroup, and an (empty) cgroup2 at .../unified. */
    private static final List<String> HYBRID = List.of(
            "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
            "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
            "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
            "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer",
            "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
            "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw");

    private static final List<String> HYBRID_GROUPS =
            List.of("8:pids:/", "6:freezer:/", "4:memory:/process_api/363a", "1:cpu:/", "0::/");

    @Test
    void aHybridHostStaysOnV1() {
        CgroupMounts mounts = CgroupMounts.parse(HYBRID, HYBRID_GROUPS, CgroupV1.ALL);

        assertThat(CgroupDetection.version(mounts)).isEqualTo(Version.V1);
        assertThat(mounts.v1().keySet()).containsExactly("cpu", "memory", "freezer", "pids");
        assertThat(mounts.v1().get("memory").dirOf(mounts.v1Own().get("memory")))
                .isEqualTo(Path.of("/sys/fs/cgroup/memory/process_api/363a"));
        assertThat(mounts.unifiedAtRoot()).isFalse();
    }

    @Test
    void aHostBootedInV2ModeIsDrivenOnTheUnifiedHierarchy() {
        CgroupMounts mounts = CgroupMounts.parse(
                List.of("25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2"
                        + " rw,nsdelegate,memory_recursiveprot"),
                List.of("0::/system.slice/chalk.service"),
                CgroupV1.ALL);

        assertThat(CgroupDetection.version(mounts)).isEqualTo(Version.V2);
        assertThat(mounts.unified().get(0).dirOf(mounts.v2Own().orElseThrow()))
                .isEqualTo(Path.of("/sys/fs/cgroup/system.slice/chalk.service"));
    }

    @Test
    void aV2ContainerSeesOnlyItsOwnPartOfTheHierarchy() {
        // without a cgroup namespace the mount's root is the container's group, and so is the process's
        CgroupMounts mounts = CgroupMounts.parse(
                List.of("690 680 0:27 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw,nsdelegate"),
                List.of("0::/docker/abc"),
                CgroupV1.ALL);

        assertThat(CgroupDetection.version(mounts)).isEqualTo(Version.V2);
        assertThat(mounts.unified().get(0).dirOf(mounts.v2Own().orElseThrow())).isEqualTo(Path.of("/sys/fs/cgroup"));
    }

    @Test
    void aUnifiedHierarchyAtTheRootWinsOverAStrayV1Mount() {
        CgroupMounts mounts = CgroupMounts.parse(
                List.of(
                        "25 22 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw",
                        "90 25 0:50 / /mnt/freezer rw - cgroup cgroup rw,freezer"),
                List.of("0::/"),
                CgroupV1.ALL);

        assertThat(CgroupDetection.version(mounts)).isEqualTo(Version.V2);
    }

    @Test
    void withNoHierarchyTheReasonIsGiven() {
        CgroupMounts mounts =
                CgroupMounts.parse(List.of("22 1 0:21 / /sys rw - sysfs sysfs rw"), List.of(), CgroupV1.ALL);

        assertThat(CgroupDetection.version(mounts)).isEqualTo(Version.NONE);
        assertThat(CgroupDetection.choose(mounts, "k"))
                .isInstanceOfSatisfying(
                        NoCgroups.class,
                        n -> assertThat(n.reason()).isEqualTo("no cgroup v1 or v2 hierarchy is mounted"));
    }

    @Test
    void thisHostIsDrivenAsItsMountsSay() throws Exception {
        CgroupMounts mounts = CgroupMounts.parse(
                Files.readAllLines(Path.of("/proc/self/mountinfo")),
                Files.readAllLines(Path.of("/proc/self/cgroup")),
                CgroupV1.ALL);
        CgroupDriver driver =
                CgroupDriver.detect("cgdetect" + ProcessHandle.current().pid());
        try {
            assertThat(driver.version())
                    .isEqualTo(
                            switch (CgroupDetection.version(mounts)) {
                                case V1 -> "cgroup v1";
                                case V2 -> "cgroup v2";
                                case NONE -> "cgroup";
                            });
        } finally {
            driver.removeBaseIfEmpty();
        }
    }
}
