package ai.chalk.compute.server.runtime.local.cgroup;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Chooses the cgroup version this runtime drives. The unified hierarchy when it is mounted at {@code /sys/fs/cgroup}
 * (a host booted in cgroup v2 mode: its controllers are there); otherwise v1 when its controllers are mounted, which
 * keeps hybrid hosts on v1 even though they also mount an (empty of these controllers) cgroup2 at
 * {@code /sys/fs/cgroup/unified}; otherwise a cgroup2 mount elsewhere; otherwise none, with the reason.
 */
final class CgroupDetection {

    private CgroupDetection() {}

    static CgroupDriver detect(String key) {
        CgroupMounts mounts;
        try {
            mounts = CgroupMounts.parse(
                    Files.readAllLines(Path.of("/proc/self/mountinfo"), StandardCharsets.UTF_8),
                    Files.readAllLines(Path.of("/proc/self/cgroup"), StandardCharsets.UTF_8),
                    CgroupV1.ALL);
        } catch (IOException | RuntimeException e) {
            return new NoCgroups("cannot read the process's cgroups: " + e.getMessage());
        }
        return choose(mounts, key);
    }

    /** The driver for the hierarchies in {@code mounts}; the chosen one probes and prepares its base groups. */
    static CgroupDriver choose(CgroupMounts mounts, String key) {
        Version version = version(mounts);
        return switch (version) {
            case V1 -> CgroupV1.detect(key, mounts);
            case V2 ->
                CgroupV2.detect(key, mounts.unified().get(0), mounts.v2Own().orElse("/"));
            case NONE ->
                new NoCgroups(
                        mounts.v2Own().isPresent() && mounts.unified().isEmpty()
                                ? "the process is in a cgroup v2 group, but no cgroup2 file system is mounted"
                                : "no cgroup v1 or v2 hierarchy is mounted");
        };
    }

    /** Which version {@link #choose} drives for these mounts. */
    static Version version(CgroupMounts mounts) {
        if (mounts.unifiedAtRoot()) {
            return Version.V2;
        }
        if (!mounts.v1().isEmpty()) {
            return Version.V1;
        }
        return mounts.unified().isEmpty() ? Version.NONE : Version.V2;
    }

    enum Version {
        V1,
        V2,
        NONE
    }
}
