package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupMount;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupMounts;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxesCap;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The common parent cgroup of this server's containers, {@code /chalk-compute-<key>}, capped as the local runtime caps
 * its sandboxes together ({@link SandboxesCap}). Each container has only the limits its tenant chose, memory up to a
 * pebibyte: without a parent, a few sandboxes asking for much could take the host's memory and process ids from
 * everything else on it, the engine and this server included. Made where the engine runs on this host with the
 * {@code cgroupfs} driver (whose parents are plain paths) and this server may write the hierarchies; elsewhere the
 * containers go where the engine puts them and {@link #problem} says why.
 */
final class ContainersGroup {

    private static final Logger log = LoggerFactory.getLogger(ContainersGroup.class);
    private static final List<String> CAPPED = List.of("memory", "pids");
    private final String group;
    private final List<Path> dirs;
    private final String problem;
    private final AtomicBoolean placementChecked = new AtomicBoolean();

    private ContainersGroup(String group, List<Path> dirs, String problem) {
        this.group = group;
        this.dirs = List.copyOf(dirs);
        this.problem = problem;
    }

    /**
     * The parent group of the runtime keyed {@code key}, made and capped now.
     *
     * @param driver     the engine's cgroup driver, when it said
     * @param engineHere whether the engine runs on this host and sees its cgroup hierarchies
     */
    static ContainersGroup make(String key, Optional<String> driver, boolean engineHere, SandboxesCap cap) {
        String group = "/chalk-compute-" + key;
        if (!engineHere) {
            return new ContainersGroup(group, List.of(), "the engine does not run on this host");
        }
        if (!driver.orElse("").equals("cgroupfs")) {
            return new ContainersGroup(
                    group, List.of(), "the engine's cgroup driver is " + driver.orElse("unknown") + ", not cgroupfs");
        }
        String info = Procfs.read(Path.of("/proc/self/mountinfo"));
        CgroupMounts mounts =
                CgroupMounts.parse(info == null ? List.of() : Arrays.asList(info.split("\n")), List.of(), CAPPED);
        List<Path> dirs = new ArrayList<>();
        List<Path> made = new ArrayList<>(); // by this call: a failure removes these, and nothing a container uses
        try {
            if (mounts.v1().containsKey("memory")) {
                for (String controller : CAPPED) {
                    Path dir = dirOf(mounts.v1().get(controller), group, controller);
                    dirs.add(dir);
                    if (!Files.isDirectory(dir)) {
                        Files.createDirectory(dir);
                        made.add(dir);
                    }
                    cap.writeV1(controller, dir);
                }
            } else {
                CgroupMount unified =
                        mounts.unified().isEmpty() ? null : mounts.unified().get(0);
                if (unified == null || !unified.point().equals(Path.of("/sys/fs/cgroup"))) {
                    throw new IOException(
                            "the host has neither cgroup v1 memory nor a unified hierarchy at" + " /sys/fs/cgroup");
                }
                Path dir = dirOf(unified, group, "unified");
                Path control = dir.getParent().resolve("cgroup.subtree_control");
                if (!enabled(control).containsAll(CAPPED)) {
                    Files.writeString(control, "+memory +pids", StandardCharsets.US_ASCII);
                }
                if (!enabled(control).containsAll(CAPPED)) {
                    throw new IOException("the memory and pids controllers are not enabled in " + control);
                }
                dirs.add(dir);
                if (!Files.isDirectory(dir)) {
                    Files.createDirectory(dir);
                    made.add(dir);
                }
                cap.writeV2(dir, CAPPED);
            }
            return new ContainersGroup(group, dirs, null);
        } catch (IOException e) {
            for (Path dir : made) {
                try {
                    Files.deleteIfExists(dir);
                } catch (IOException ignored) {
                    // the engine made a container's group in it meanwhile: it stays, uncapped
                }
            }
            return new ContainersGroup(group, List.of(), "cannot make " + group + " in the host's cgroups: " + e);
        }
    }

    /** The controllers a unified group enables for its children. */
    private static List<String> enabled(Path subtreeControl) throws IOException {
        return Arrays.asList(Files.readString(subtreeControl, StandardCharsets.US_ASCII)
                .trim()
                .split(" "));
    }

    private static Path dirOf(CgroupMount mount, String group, String hierarchy) throws IOException {
        if (mount == null || !mount.root().equals("/")) {
            throw new IOException("this server does not see the whole " + hierarchy + " hierarchy");
        }
        return mount.dirOf(group);
    }

    /** The group to give as the containers' {@code CgroupParent}; empty when there is none ({@link #problem}). */
    Optional<String> parent() {
        return problem == null ? Optional.of(group) : Optional.empty();
    }

    /** Why the containers have no capped parent; empty when they have one. */
    Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /**
     * Checks, for the first container only, that the engine put it in this group as this server sees it: a server in a
     * cgroup namespace of its own would have capped a group the engine does not use. Logged, not refused.
     */
    void checkPlacement(long initHostPid, String containerId) {
        if (problem != null || dirs.isEmpty() || !placementChecked.compareAndSet(false, true)) {
            return;
        }
        Optional<Path> memory = ContainerCgroups.v1(initHostPid, containerId, "memory")
                .or(() -> ContainerCgroups.v2(initHostPid, containerId));
        if (memory.isPresent() && !dirs.contains(memory.get().getParent())) {
            log.warn(
                    "Container {} is in {}, not in the capped group {}: its sandboxes together have no cap",
                    containerId,
                    memory.get(),
                    dirs);
        }
    }

    /**
     * Removes the group, in every hierarchy (the engine made it in those of the other controllers), once no container
     * is left in it.
     */
    void remove() {
        if (!dirs.isEmpty()) {
            dirs.forEach(BuildGroup::removeEmpty);
            BuildGroup.forEachHierarchy(h -> BuildGroup.removeEmpty(h.resolve(group.substring(1))));
        }
    }
}
