package ai.chalk.compute.server.runtime.local.cgroup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Hands controllers down the unified hierarchy from the server's own group to the runtime's base, through each
 * group's {@code cgroup.subtree_control}: on v2 a group has a controller's files only when its parent enabled it so.
 *
 * <p>A group that enables controllers for its children must have no processes of its own (v2's no-internal-process
 * rule; only the root is exempt). The server's own group usually holds the server: where that alone stops the
 * delegation, the server moves itself into a leaf {@value #SERVER_LEAF} of its own group and tries again, as systemd
 * asks of services with {@code Delegate=yes} and container inits do. Any other process there makes it give up and say
 * so. All of this stays below the server's own group, which is also what {@code nsdelegate} allows a server in a
 * cgroup namespace whose root that group is: its {@code cgroup.subtree_control} and migrations below it, nothing above.
 */
final class V2Delegation {

    /** The leaf the server moves itself into when its own group must hand controllers down. */
    static final String SERVER_LEAF = "chalk-compute-server";

    private V2Delegation() {}

    /**
     * Enables each of {@code controllers} in the {@code cgroup.subtree_control} of {@code own} and of every group
     * from it down to {@code base}'s (so that groups made in {@code base} have them), creating the groups.
     *
     * @return a problem for each controller that could not be handed down; those stay out of the sandboxes' groups
     */
    static List<String> enable(Path own, Path base, List<String> controllers) throws IOException {
        Files.createDirectories(base);
        List<Path> chain = new ArrayList<>();
        for (Path p = base; !p.equals(own); p = p.getParent()) {
            chain.add(0, p);
        }
        chain.add(0, own);
        List<String> problems = new ArrayList<>();
        for (String controller : controllers) {
            for (Path group : chain) {
                String failure = enableIn(group, controller, group.equals(own));
                if (failure != null) {
                    problems.add(controller + " cannot be handed down from " + group + " (" + failure + ")");
                    break;
                }
            }
        }
        return problems;
    }

    private static String enableIn(Path group, String controller, boolean own) {
        Path control = group.resolve("cgroup.subtree_control");
        try {
            CgroupFiles.write(control, "+" + controller);
            return null;
        } catch (IOException e) {
            if (!own || CgroupFiles.procs(group, false).isEmpty()) {
                return e.getMessage();
            }
        }
        // EBUSY: the group has processes. The server's own leaves; anything else stays and is named.
        List<Long> others = CgroupFiles.procs(group, false);
        others.remove(ProcessHandle.current().pid());
        if (!others.isEmpty()) {
            return "the group holds processes other than this server's (" + others + "), and cgroup v2 lets a group"
                    + " with processes hand no controller down: run the server in a group of its own (systemd"
                    + " Delegate=yes, or a container)";
        }
        try {
            Path leaf = group.resolve(SERVER_LEAF);
            Files.createDirectories(leaf);
            CgroupFiles.write(
                    leaf.resolve("cgroup.procs"),
                    Long.toString(ProcessHandle.current().pid()));
            CgroupFiles.write(control, "+" + controller);
            return null;
        } catch (IOException e) {
            return "cannot move this server into " + group.resolve(SERVER_LEAF) + " to free the group: "
                    + e.getMessage();
        }
    }
}
