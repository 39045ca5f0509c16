package ai.chalk.compute.server.runtime.local.cgroup;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The cgroup hierarchies a process sees and its group in each, read from the lines of {@code /proc/self/mountinfo}
 * and {@code /proc/self/cgroup} (passed in, so that tests can describe any host).
 *
 * @param v1      the v1 hierarchy mounted for each controller of interest, first mount wins
 * @param unified the cgroup2 mounts, {@code /sys/fs/cgroup} first when it is one
 * @param v1Own   the process's group in each v1 controller's hierarchy
 * @param v2Own   the process's group in the unified hierarchy ({@code 0::/path}), when it has one
 */
public record CgroupMounts(
        Map<String, CgroupMount> v1, List<CgroupMount> unified, Map<String, String> v1Own, Optional<String> v2Own) {

    static final Path UNIFIED_ROOT = Path.of("/sys/fs/cgroup");

    /** The hierarchies of the {@code v1Controllers} (and the unified one) and the process's group in each. */
    public static CgroupMounts parse(List<String> mountinfo, List<String> cgroup, List<String> v1Controllers) {
        Map<String, CgroupMount> v1 = new LinkedHashMap<>();
        List<CgroupMount> unified = new ArrayList<>();
        for (String line : mountinfo) {
            String[] parts = line.split(" - ", 2);
            if (parts.length < 2) {
                continue;
            }
            String[] tail = parts[1].split(" ");
            String[] head = parts[0].split(" ");
            if (tail.length < 3 || head.length < 5) {
                continue;
            }
            CgroupMount mount = new CgroupMount(Path.of(unescape(head[4])), unescape(head[3]));
            if (tail[0].equals("cgroup")) {
                for (String option : tail[2].split(",")) {
                    if (v1Controllers.contains(option)) {
                        v1.putIfAbsent(option, mount);
                    }
                }
            } else if (tail[0].equals("cgroup2")) {
                if (mount.point().equals(UNIFIED_ROOT)) {
                    unified.add(0, mount);
                } else {
                    unified.add(mount);
                }
            }
        }
        Map<String, String> v1Own = new LinkedHashMap<>();
        String v2Own = null;
        for (String line : cgroup) {
            String[] f = line.split(":", 3);
            if (f.length < 3) {
                continue;
            }
            if (f[0].equals("0") && f[1].isEmpty()) {
                v2Own = f[2];
            }
            for (String controller : f[1].split(",")) {
                if (v1Controllers.contains(controller)) {
                    v1Own.put(controller, f[2]);
                }
            }
        }
        return new CgroupMounts(v1, List.copyOf(unified), v1Own, Optional.ofNullable(v2Own));
    }

    /** Whether the unified hierarchy is mounted at {@code /sys/fs/cgroup}, as on a host booted in cgroup v2 mode. */
    boolean unifiedAtRoot() {
        return !unified.isEmpty() && unified.get(0).point().equals(UNIFIED_ROOT);
    }

    private static String unescape(String s) {
        return s.replace("\\040", " ")
                .replace("\\011", "\t")
                .replace("\\012", "\n")
                .replace("\\134", "\\");
    }
}
