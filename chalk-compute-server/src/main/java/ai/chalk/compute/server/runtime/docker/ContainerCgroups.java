package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.Procfs;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where a container's cgroups are on this host, found from its init's {@code /proc/<pid>/cgroup} and this server's
 * cgroup mounts: the engine made them, under whichever parent its cgroup driver chose, and says nothing of them over
 * its API. Only meaningful when the engine runs on this host.
 */
final class ContainerCgroups {

    private ContainerCgroups() {}

    /** The container's group in the cgroup v1 hierarchy of {@code controller}, when there is one here. */
    static Optional<Path> v1(long initHostPid, String containerId, String controller) {
        for (String[] line : lines(initHostPid)) {
            if (List.of(line[1].split(",")).contains(controller) && line[2].contains(containerId)) {
                for (String[] m : mounts()) {
                    if (m[2].equals("cgroup") && List.of(m[3].split(",")).contains(controller)) {
                        Optional<Path> dir = under(m, line[2]);
                        if (dir.isPresent()) {
                            return dir;
                        }
                    }
                }
            }
        }
        return Optional.empty();
    }

    /** The container's group on a pure cgroup v2 host (one unified hierarchy and no other). */
    static Optional<Path> v2(long initHostPid, String containerId) {
        List<String[]> lines = lines(initHostPid);
        if (lines.size() != 1 || !lines.get(0)[0].equals("0") || !lines.get(0)[1].isEmpty()) {
            return Optional.empty();
        }
        String path = lines.get(0)[2];
        if (!path.contains(containerId)) {
            return Optional.empty();
        }
        for (String[] m : mounts()) {
            if (m[2].equals("cgroup2")) {
                Optional<Path> dir = under(m, path);
                if (dir.isPresent()) {
                    return dir;
                }
            }
        }
        return Optional.empty();
    }

    /** The lines of {@code /proc/<pid>/cgroup}: hierarchy id, controllers, path. */
    private static List<String[]> lines(long pid) {
        List<String[]> lines = new ArrayList<>();
        for (String line : Procfs.cgroups(pid).split("\n")) {
            String[] f = line.split(":", 3);
            if (!line.isBlank() && f.length == 3) {
                lines.add(f);
            }
        }
        return lines;
    }

    /** Where a group path (as {@code /proc/<pid>/cgroup} shows it) is under a mount, if it is under it at all. */
    private static Optional<Path> under(String[] mount, String path) {
        String root = mount[0];
        if (root.equals("/")) {
            return Optional.of(Path.of(mount[1] + path));
        }
        if (path.equals(root) || path.startsWith(root + "/")) {
            return Optional.of(Path.of(mount[1] + path.substring(root.length())));
        }
        return Optional.empty();
    }

    /** The cgroup mounts of this process: root, mount point, file system type, super options. */
    private static List<String[]> mounts() {
        List<String[]> found = new ArrayList<>();
        String info = Procfs.read(Path.of("/proc/self/mountinfo"));
        if (info == null) {
            return found;
        }
        for (String line : info.split("\n")) {
            int dash = line.indexOf(" - ");
            if (dash < 0) {
                continue;
            }
            String[] left = line.substring(0, dash).split(" ");
            String[] right = line.substring(dash + 3).split(" ");
            if (left.length >= 5 && right.length >= 3 && right[0].startsWith("cgroup")) {
                found.add(new String[] {unescape(left[3]), unescape(left[4]), right[0], right[2]});
            }
        }
        return found;
    }

    private static String unescape(String s) {
        return s.replace("\\040", " ")
                .replace("\\011", "\t")
                .replace("\\012", "\n")
                .replace("\\134", "\\");
    }
}
