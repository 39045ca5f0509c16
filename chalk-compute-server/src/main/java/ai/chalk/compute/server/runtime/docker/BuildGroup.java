package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.local.cgroup.CgroupFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The cgroup that holds one build's step containers, made here with a process limit before the build starts and
 * named to the engine as their {@code cgroupparent}: the Engine's build API sets memory and cpu per step but has no
 * process limit, so without it a build step's fork bomb exhausts the host's pids. Needs the engine's
 * {@code cgroupfs} driver on this host and root; cgroup v1 (the {@code pids} hierarchy) or v2 (the unified one).
 */
final class BuildGroup implements AutoCloseable {

    /** The parent of every build's group, under the root of the pids hierarchy. */
    static final String PARENT = "chalk-compute-builds";

    private final Path dir;
    private final String name;
    private final String cgroupParent;

    private BuildGroup(Path dir, String name, String cgroupParent) {
        this.dir = dir;
        this.name = name;
        this.cgroupParent = cgroupParent;
    }

    /**
     * Makes the group of one build, limited to {@code pidsMax} processes; empty when this host cannot (no writable
     * pids hierarchy: not root, or the engine elsewhere).
     */
    static Optional<BuildGroup> create(String name, long pidsMax) {
        Path root = pidsRoot();
        if (root == null) {
            return Optional.empty();
        }
        try {
            Path parent = root.resolve(PARENT);
            Files.createDirectories(parent);
            if (root.equals(Path.of("/sys/fs/cgroup"))) { // unified: the pids controller must reach the children
                Files.writeString(
                        parent.resolve("cgroup.subtree_control"), "+pids +memory +cpu", StandardCharsets.US_ASCII);
            }
            Path dir = parent.resolve(name);
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("pids.max"), Long.toString(pidsMax), StandardCharsets.US_ASCII);
            return Optional.of(new BuildGroup(dir, name, "/" + PARENT + "/" + name));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Where the pids hierarchy is mounted on this host, if this process may write it. */
    private static Path pidsRoot() {
        Path v1 = Path.of("/sys/fs/cgroup/pids");
        if (Files.isDirectory(v1) && Files.isWritable(v1)) {
            return v1;
        }
        Path v2 = Path.of("/sys/fs/cgroup");
        if (Files.isRegularFile(v2.resolve("cgroup.subtree_control")) && Files.isWritable(v2)) {
            return v2;
        }
        return null;
    }

    /** The engine's {@code cgroupparent} for the build's steps. */
    String cgroupParent() {
        return cgroupParent;
    }

    /** The processes of the build's steps now: those of this group and of the steps' groups the engine made in it. */
    List<Long> processes() {
        return CgroupFiles.procs(dir, true);
    }

    /**
     * Whether process {@code pid} is in this build's group now (a pid read from the group may have ended and been
     * given to another process since).
     */
    boolean holds(long pid) {
        try {
            String groupPath = "/" + PARENT + "/" + name + "/";
            return Files.readAllLines(Path.of("/proc", Long.toString(pid), "cgroup")).stream()
                    .anyMatch(line ->
                            (line.substring(line.indexOf(':', line.indexOf(':') + 1) + 1) + "/").startsWith(groupPath));
        } catch (IOException | RuntimeException gone) {
            return false;
        }
    }

    /** The limit the group carries, as the kernel reports it. */
    String pidsMax() throws IOException {
        return Files.readString(dir.resolve("pids.max")).strip();
    }

    /**
     * Removes the group (in every hierarchy: the engine made it in the others) once the engine removed the steps'
     * groups in it; an empty group left by a server killed mid-build costs nothing.
     */
    @Override
    public void close() {
        removeEmpty(dir);
        forEachHierarchy(h -> removeEmpty(h.resolve(PARENT).resolve(name)));
    }

    /** Runs {@code action} on the root of each cgroup v1 hierarchy (and on the groups below a v2 root). */
    static void forEachHierarchy(java.util.function.Consumer<Path> action) {
        try (DirectoryStream<Path> all = Files.newDirectoryStream(Path.of("/sys/fs/cgroup"), Files::isDirectory)) {
            all.forEach(action);
        } catch (IOException e) {
            // no cgroup v1 hierarchies here
        }
    }

    /** Removes {@code group} and the groups below it, those empty of processes. */
    static void removeEmpty(Path group) {
        try (DirectoryStream<Path> children = Files.newDirectoryStream(group, Files::isDirectory)) {
            children.forEach(BuildGroup::removeEmpty);
        } catch (IOException e) {
            return;
        }
        try {
            Files.deleteIfExists(group); // cgroup directories go with rmdir once empty of processes and children
        } catch (IOException e) {
            // still in use
        }
    }
}
