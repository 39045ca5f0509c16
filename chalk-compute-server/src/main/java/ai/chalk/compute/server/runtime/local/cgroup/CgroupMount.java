package ai.chalk.compute.server.runtime.local.cgroup;

import java.nio.file.Path;

/**
 * A cgroup hierarchy's mount, from {@code /proc/self/mountinfo}: where it is mounted and which group of the hierarchy
 * is its root (not {@code /} in a container that sees only its own part).
 */
public record CgroupMount(Path point, String root) {

    /** Whether {@code group} lies below this mount's root, so that the mount shows it. */
    public boolean shows(String group) {
        return root.equals("/") || group.equals(root) || group.startsWith(root + "/");
    }

    /** The host directory of {@code group} (a path as {@code /proc/self/cgroup} shows it). */
    public Path dirOf(String group) {
        String rel = group;
        if (!root.equals("/") && (group.equals(root) || group.startsWith(root + "/"))) {
            rel = group.substring(root.length());
        }
        rel = rel.startsWith("/") ? rel.substring(1) : rel;
        return rel.isEmpty() ? point : point.resolve(rel);
    }
}
