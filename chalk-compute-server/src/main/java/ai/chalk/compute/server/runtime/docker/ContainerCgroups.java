package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupMount;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupMounts;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Where a container's cgroups are on this host, found from its init's {@code /proc/<pid>/cgroup} and this server's
 * cgroup mounts ({@link CgroupMounts}, as the local runtime reads its own): the engine made them, under whichever
 * parent its cgroup driver chose, and says nothing of them over its API. Only meaningful when the engine runs on this
 * host.
 */
final class ContainerCgroups {

    private ContainerCgroups() {}

    /** The container's group in the cgroup v1 hierarchy of {@code controller}, when there is one here. */
    static Optional<Path> v1(long initHostPid, String containerId, String controller) {
        CgroupMounts mounts = mounts(initHostPid, List.of(controller));
        String group = mounts.v1Own().get(controller);
        CgroupMount mount = mounts.v1().get(controller);
        return group != null && group.contains(containerId) && mount != null && mount.shows(group)
                ? Optional.of(mount.dirOf(group))
                : Optional.empty();
    }

    /** The container's group on a pure cgroup v2 host (one unified hierarchy and no other). */
    static Optional<Path> v2(long initHostPid, String containerId) {
        List<String> lines = cgroupLines(initHostPid);
        CgroupMounts mounts = mounts(initHostPid, List.of());
        if (lines.size() != 1 || mounts.v2Own().isEmpty() || mounts.unified().isEmpty()) {
            return Optional.empty();
        }
        String group = mounts.v2Own().get();
        CgroupMount mount = mounts.unified().get(0);
        return group.contains(containerId) && mount.shows(group) ? Optional.of(mount.dirOf(group)) : Optional.empty();
    }

    private static CgroupMounts mounts(long pid, List<String> controllers) {
        String info = Procfs.read(Path.of("/proc/self/mountinfo"));
        return CgroupMounts.parse(
                info == null ? List.of() : Arrays.asList(info.split("\n")), cgroupLines(pid), controllers);
    }

    private static List<String> cgroupLines(long pid) {
        return Arrays.stream(Procfs.cgroups(pid).split("\n"))
                .filter(l -> !l.isBlank())
                .toList();
    }
}
