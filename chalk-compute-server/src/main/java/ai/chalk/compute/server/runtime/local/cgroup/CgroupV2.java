package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Cgroup v2: one unified hierarchy. The runtime's base group is {@code <own group>/chalk-compute/<key>}, with the
 * limiting controllers handed down to it ({@link V2Delegation}); a sandbox gets {@code <id>} below it, holding its
 * limits ({@link V2Limits}), and below that the leaves its processes live in: {@code init} for its init and one
 * {@code x<n>} per exec (a group with processes cannot also have children with controllers, so the sandbox's own
 * group stays empty). Every exec has a group of its own with or without the {@code pids} controller, and
 * {@code cgroup.kill} (Linux 5.14) kills a group at once; {@code cgroup.freeze} (Linux 5.2) is the freezer.
 *
 * <p>A controller missing from the server's group's {@code cgroup.controllers} (bound to a v1 hierarchy on a hybrid
 * host, or not delegated to the server) is left out and named in {@link #problem}, as {@link CgroupV1} does with an
 * unmounted one: its limit is not enforced, the rest are.
 */
public final class CgroupV2 implements CgroupDriver {

    private final Path base;
    private final List<String> controllers;
    private final boolean freezer;
    private final boolean kill;
    private final String problem;
    private final String freezerProblem;

    CgroupV2(
            Path base, List<String> controllers, boolean freezer, boolean kill, String problem, String freezerProblem) {
        this.base = base;
        this.controllers = List.copyOf(controllers);
        this.freezer = freezer;
        this.kill = kill;
        this.problem = problem;
        this.freezerProblem = freezer ? null : freezerProblem != null ? freezerProblem : "freezer is not usable";
    }

    /** The driver for the server's group {@code ownGroup} (as {@code /proc/self/cgroup} shows it) in {@code mount}. */
    static CgroupV2 detect(String key, CgroupMount mount, String ownGroup) {
        Path own = mount.dirOf(ownGroup);
        if (own.getFileName() != null && own.getFileName().toString().equals(V2Delegation.SERVER_LEAF)) {
            own = own.getParent(); // an earlier runtime of this server moved it there to hand controllers down
        }
        return at(own, key);
    }

    /**
     * Probes the unified hierarchy below the server's group {@code own} and prepares the base group: what
     * {@link CgroupDriver#detect} does with the group the server is in; tests pass a fresh group of their own.
     */
    public static CgroupV2 at(Path own, String key) {
        Path base = own.resolve("chalk-compute").resolve(key);
        List<String> available;
        try {
            available = Arrays.asList(
                    CgroupFiles.read(own.resolve("cgroup.controllers")).split("\\s+"));
        } catch (IOException e) {
            String why = "cannot read " + own.resolve("cgroup.controllers") + ": " + e.getMessage();
            return new CgroupV2(base, List.of(), false, false, why, why);
        }
        List<String> problems = new ArrayList<>();
        List<String> wanted = new ArrayList<>();
        for (String controller : CONTROLLERS) {
            if (available.contains(controller)) {
                wanted.add(controller);
            } else {
                problems.add(controller + " is not available in " + own.resolve("cgroup.controllers")
                        + " (bound to a cgroup v1 hierarchy, or not delegated to this server's group)");
            }
        }
        List<String> usable = new ArrayList<>(wanted);
        try {
            for (String failure : V2Delegation.enable(own, base, wanted)) {
                problems.add(failure);
                usable.remove(failure.substring(0, failure.indexOf(' ')));
            }
        } catch (IOException e) {
            String why = "cgroup v2 group " + base + " is not usable (" + e.getMessage() + ")";
            problems.add(why);
            return new CgroupV2(base, List.of(), false, false, String.join("; ", problems), why);
        }
        Path test = base.resolve("probe-" + ProcessHandle.current().pid());
        String freezerProblem = null;
        boolean freezer;
        boolean kill;
        try {
            CgroupFiles.rmdir(test);
            Files.createDirectory(test);
            try {
                for (String controller : List.copyOf(usable)) {
                    String failure = probe(test, controller);
                    if (failure != null) {
                        usable.remove(controller);
                        problems.add(failure);
                    }
                }
                if (!Files.isWritable(test.resolve("cgroup.procs"))) {
                    throw new IOException("its cgroup.procs is not writable");
                }
                freezer = Files.exists(test.resolve("cgroup.freeze"));
                if (freezer) {
                    CgroupFiles.write(test.resolve("cgroup.freeze"), "0");
                } else {
                    freezerProblem = "cgroup v2 has no cgroup.freeze in " + base + " (Linux 5.2 or later has it)";
                }
                kill = Files.exists(test.resolve("cgroup.kill"));
            } finally {
                CgroupFiles.rmdir(test);
            }
        } catch (IOException e) {
            String why = "cgroup v2 group " + base + " is not usable (" + e.getMessage() + ")";
            problems.add(why);
            return new CgroupV2(base, List.of(), false, false, String.join("; ", problems), why);
        }
        return new CgroupV2(
                base, usable, freezer, kill, problems.isEmpty() ? null : String.join("; ", problems), freezerProblem);
    }

    private static String probe(Path group, String controller) {
        String file = switch (controller) {
            case "cpu" -> "cpu.max";
            case "memory" -> "memory.max";
            case "pids" -> "pids.max";
            default -> throw new IllegalArgumentException(controller);
        };
        try {
            CgroupFiles.write(group.resolve(file), "max");
            return null;
        } catch (IOException e) {
            return controller + " is not usable in " + group.getParent() + " (" + e.getMessage() + ")";
        }
    }

    @Override
    public String version() {
        return "cgroup v2";
    }

    @Override
    public List<String> controllers() {
        return CONTROLLERS.stream().filter(controllers::contains).toList();
    }

    @Override
    public boolean has(String controller) {
        return controllers.contains(controller) || (controller.equals("freezer") && freezer);
    }

    @Override
    public boolean any() {
        return !controllers.isEmpty() || freezer;
    }

    /** Always when sandboxes have groups: a v2 group needs no controller to hold and kill processes. */
    @Override
    public boolean tracksExecs() {
        return any();
    }

    @Override
    public boolean freezer() {
        return freezer;
    }

    @Override
    public String freezerName() {
        return "cgroup v2 freezer (cgroup.freeze)";
    }

    @Override
    public Optional<String> freezerProblem() {
        return Optional.ofNullable(freezerProblem);
    }

    @Override
    public Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    @Override
    public SandboxCgroup create(String id, ResourceLimits limits, long pidsMax) throws IOException {
        Path dir = base.resolve(id);
        if (Files.exists(dir)) {
            removeSandbox(id); // leftovers of an earlier sandbox with this id
        }
        // the base goes when the runtime closes with no sandbox left; made again, it hands the controllers down again
        if (!Files.isDirectory(base)) {
            Files.createDirectories(base);
            for (String controller : controllers) {
                CgroupFiles.write(base.resolve("cgroup.subtree_control"), "+" + controller);
            }
        }
        SandboxesCap.ofHost().writeV2(base, controllers);
        Files.createDirectory(dir);
        try {
            V2Limits.set(dir, controllers, limits, pidsMax);
            Files.createDirectory(dir.resolve("init"));
            return new V2SandboxCgroup(dir, controllers, freezer, kill);
        } catch (IOException e) {
            CgroupFiles.removeTree(dir, 1_000);
            throw e;
        }
    }

    @Override
    public Collection<Path> baseDirs() {
        return any() ? List.of(base) : List.of();
    }

    @Override
    public void removeSandbox(String id) {
        Path dir = base.resolve(id);
        if (Files.isDirectory(dir)) {
            new V2SandboxCgroup(dir, controllers, freezer, kill).remove();
        }
    }
}
