package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The local runtime's cgroup v1 groups. Every runtime owns {@code <its own cgroup>/chalk-compute/<key>} in the
 * {@code cpu}, {@code memory} and {@code pids} hierarchies ({@code key} is derived from its state directory, so
 * two runtimes on one host never touch each other's groups); a sandbox gets {@code <id>} below that, and in the
 * pids hierarchy one sub-group {@code init} for its init and one {@code x<n>} per exec, which is how
 * {@link Group#killAll} reaches every process an exec started, daemons included. Groups are nested under the
 * server's own cgroup so that limits put on the server still bound its sandboxes.
 *
 * <p>Where the {@code freezer} hierarchy is usable too, a sandbox also gets a freezer group {@code <id>} that its
 * init and every exec join like the cpu and memory groups; {@link SandboxGroups#freeze} stops everything in the
 * sandbox at once (suspend, consistent snapshots) and {@link SandboxGroups#thaw} lets it continue.
 */
final class Cgroups {

    /** The controllers that limit a sandbox; {@link #controllers()} lists those in use. */
    static final List<String> CONTROLLERS = List.of("cpu", "memory", "pids");
    /** The controller that suspends a sandbox, used in addition to the limits where it is available. */
    static final String FREEZER = "freezer";
    private static final List<String> ALL = List.of("cpu", "memory", "pids", FREEZER);
    static final long CFS_PERIOD_US = 100_000;

    private final Map<String, Path> base;
    private final String problem;
    private final String freezerProblem;

    private Cgroups(Map<String, Path> base, String problem, String freezerProblem) {
        this.base = base;
        this.problem = problem;
        this.freezerProblem = base.containsKey(FREEZER) ? null
                : freezerProblem != null ? freezerProblem : problem != null ? problem : "freezer is not usable";
    }

    private Cgroups(Map<String, Path> base, String problem) {
        this(base, problem, null);
    }

    /** No cgroups at all, for the reason given. */
    static Cgroups unavailable(String reason) {
        return new Cgroups(Map.of(), reason);
    }

    /** Finds writable cgroup v1 hierarchies for the controllers and prepares this runtime's base groups. */
    static Cgroups detect(String key) {
        Map<String, Mount> mounts;
        Map<String, String> own;
        try {
            mounts = v1Mounts();
            own = ownGroups();
        } catch (IOException | RuntimeException e) {
            return new Cgroups(Map.of(), "cannot read the process's cgroups: " + e.getMessage());
        }
        if (mounts.isEmpty()) {
            return new Cgroups(Map.of(), Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers"))
                    ? "the host uses cgroup v2 only, which this runtime does not drive yet"
                    : "no cgroup v1 hierarchy is mounted");
        }
        Map<String, Path> usable = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        String freezerProblem = null;
        for (String controller : ALL) {
            Mount mount = mounts.get(controller);
            String failure;
            Path dir = null;
            if (mount == null) {
                failure = controller + " is not mounted";
            } else {
                dir = mount.dirOf(own.getOrDefault(controller, "/")).resolve("chalk-compute").resolve(key);
                failure = probe(controller, dir);
            }
            if (failure == null) {
                usable.put(controller, dir);
            } else if (controller.equals(FREEZER)) {
                freezerProblem = failure;
            } else {
                problems.add(failure);
            }
        }
        return new Cgroups(java.util.Collections.unmodifiableMap(usable),
                problems.isEmpty() ? null : String.join("; ", problems), freezerProblem);
    }

    private static String probe(String controller, Path dir) {
        Path test = dir.resolve("probe-" + ProcessHandle.current().pid());
        try {
            Files.createDirectories(dir);
            rmdir(test);
            Files.createDirectory(test);
            try {
                switch (controller) {
                    case "cpu" -> write(test.resolve("cpu.cfs_quota_us"), "-1");
                    case "memory" -> write(test.resolve("memory.limit_in_bytes"), "-1");
                    case "pids" -> write(test.resolve("pids.max"), "max");
                    case FREEZER -> write(test.resolve("freezer.state"), "THAWED");
                    default -> throw new IllegalArgumentException(controller);
                }
                if (!Files.isWritable(test.resolve("cgroup.procs"))) {
                    return controller + " group " + dir + " is not writable";
                }
            } finally {
                rmdir(test);
            }
            return null;
        } catch (IOException e) {
            return controller + " group " + dir + " is not usable (" + e.getMessage() + ")";
        }
    }

    /** Limiting controllers this runtime enforces, in {@link #CONTROLLERS} order (the freezer is not one). */
    List<String> controllers() {
        return base.keySet().stream().filter(CONTROLLERS::contains).toList();
    }

    /** Whether sandboxes get groups at all: some limiting controller or the freezer is usable. */
    boolean any() {
        return !base.isEmpty();
    }

    /** Whether sandboxes can be frozen (suspended). */
    boolean freezer() {
        return base.containsKey(FREEZER);
    }

    /** Why the freezer is unusable, if it is. */
    Optional<String> freezerProblem() {
        return Optional.ofNullable(freezerProblem);
    }

    boolean has(String controller) {
        return base.containsKey(controller);
    }

    /** Why some or all controllers are unusable, if they are. */
    Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /**
     * Caps all of this runtime's sandboxes together, in their common parent group: half the host's process ids (with
     * {@code pid_max} at 32768, eight sandboxes of 4096 processes each took them all, and the host could fork no
     * more) and three quarters of its memory, so that sandboxes at their own limits still leave the server room.
     */
    private static void capAllSandboxes(String controller, Path base) throws IOException {
        switch (controller) {
            case "pids" -> write(base.resolve("pids.max"), Long.toString(Math.max(64,
                    Math.min(readLong("/proc/sys/kernel/pid_max"), readLong("/proc/sys/kernel/threads-max")) / 2)));
            case "memory" -> {
                long total = hostMemoryBytes();
                if (total > 0) {
                    write(base.resolve("memory.limit_in_bytes"), Long.toString(total / 4 * 3));
                }
            }
            default -> { }
        }
    }

    private static long readLong(String file) {
        try {
            // not Files.readString: seeing size 0 it reads one byte, then reads on, and a sysctl file answers a read
            // at a non-zero offset with end-of-file, which made pid_max "3" instead of "32768"
            return Long.parseLong(Files.readAllLines(Path.of(file)).get(0).trim());
        } catch (IOException | RuntimeException e) {
            return 32768;
        }
    }

    private static long hostMemoryBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemTotal:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // no cap then
        }
        return -1;
    }

    /** Creates the groups of a sandbox, with its limits set. */
    SandboxGroups create(String id, ResourceLimits limits, long pidsMax) throws IOException {
        Map<String, Path> dirs = new LinkedHashMap<>();
        if (base.values().stream().anyMatch(d -> Files.exists(d.resolve(id)))) {
            removeSandbox(id); // leftovers of an earlier sandbox with this id
        }
        try {
            for (Map.Entry<String, Path> e : base.entrySet()) {
                Path dir = e.getValue().resolve(id);
                Files.createDirectories(e.getValue()); // the base goes when the runtime closes with no sandbox left
                capAllSandboxes(e.getKey(), e.getValue());
                Files.createDirectory(dir);
                dirs.put(e.getKey(), dir);
            }
            Path cpu = dirs.get("cpu");
            if (cpu != null && limits.milliCpus().isPresent()) {
                long quota = Math.max(1_000, limits.milliCpus().get() * CFS_PERIOD_US / 1_000);
                write(cpu.resolve("cpu.cfs_period_us"), Long.toString(CFS_PERIOD_US));
                write(cpu.resolve("cpu.cfs_quota_us"), Long.toString(quota));
            }
            Path memory = dirs.get("memory");
            if (memory != null && limits.memoryBytes().isPresent()) {
                String bytes = Long.toString(limits.memoryBytes().get());
                write(memory.resolve("memory.limit_in_bytes"), bytes);
                Path memsw = memory.resolve("memory.memsw.limit_in_bytes");
                if (Files.exists(memsw)) {
                    try {
                        write(memsw, bytes); // no swapping past the limit either
                    } catch (IOException e) {
                        // swap accounting off: the memory limit alone applies
                    }
                }
            }
            Path pids = dirs.get("pids");
            if (pids != null) {
                write(pids.resolve("pids.max"), Long.toString(pidsMax));
                Files.createDirectory(pids.resolve("init"));
            }
            return new SandboxGroups(dirs);
        } catch (IOException e) {
            for (Path dir : dirs.values()) {
                removeTree(dir, 1_000);
            }
            throw e;
        }
    }

    /** This runtime's base group in each hierarchy (sandbox groups are named by id below them). */
    java.util.Collection<Path> baseDirs() {
        return List.copyOf(base.values());
    }

    /** Sandbox ids that have groups under this runtime's base. */
    List<String> leftoverIds() {
        List<String> ids = new ArrayList<>();
        for (Path dir : base.values()) {
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, Files::isDirectory)) {
                for (Path p : ds) {
                    String name = p.getFileName().toString();
                    if (!ids.contains(name)) {
                        ids.add(name);
                    }
                }
            } catch (IOException e) {
                // nothing there
            }
        }
        return ids;
    }

    /** Removes this runtime's base groups if no sandbox group is left in them. */
    void removeBaseIfEmpty() {
        for (Path dir : base.values()) {
            try {
                rmdir(dir);
            } catch (IOException e) {
                // still in use
            }
        }
    }

    /** Kills whatever still runs in a sandbox's groups and removes them. */
    void removeSandbox(String id) {
        Path freezer = base.get(FREEZER);
        if (freezer != null && Files.isDirectory(freezer.resolve(id))) {
            thaw(freezer.resolve(id)); // frozen processes do not die until thawed
        }
        Path pids = base.get("pids");
        if (pids != null && Files.isDirectory(pids.resolve(id))) {
            new Group(pids.resolve(id)).killAll(5_000);
        }
        for (Path dir : base.values()) {
            Path sandbox = dir.resolve(id);
            if (Files.isDirectory(sandbox)) {
                for (long pid : procs(sandbox, true)) {
                    if (pid != Procfs.SELF) {
                        HostSignals.signal(pid, HostSignals.SIGKILL);
                    }
                }
                removeTree(sandbox, 2_000);
            }
        }
    }

    /** The groups of one sandbox. */
    static final class SandboxGroups {
        private final Map<String, Path> dirs;
        private final AtomicLong execs = new AtomicLong();

        SandboxGroups(Map<String, Path> dirs) {
            this.dirs = dirs;
        }

        /** The {@code cgroup.procs} files the sandbox's init must be written into. */
        List<Path> initProcsFiles() {
            List<Path> files = new ArrayList<>();
            dirs.forEach((c, d) -> files.add((c.equals("pids") ? d.resolve("init") : d).resolve("cgroup.procs")));
            return files;
        }

        /** A new per-exec group; {@code procsFiles} are what the exec's first process joins. */
        ExecGroup newExec() throws IOException {
            Path pids = dirs.get("pids");
            Group group = null;
            if (pids != null) {
                Path dir = pids.resolve("x" + execs.incrementAndGet());
                Files.createDirectory(dir);
                group = new Group(dir);
            }
            List<Path> files = new ArrayList<>();
            for (Map.Entry<String, Path> e : dirs.entrySet()) {
                files.add(e.getKey().equals("pids") ? group.dir.resolve("cgroup.procs") : e.getValue().resolve("cgroup.procs"));
            }
            return new ExecGroup(List.copyOf(files), group);
        }

        /** The sandbox's whole pids group (init and every exec), when the pids controller is in use. */
        Optional<Group> pidsGroup() {
            return Optional.ofNullable(dirs.get("pids")).map(Group::new);
        }

        Optional<Path> dir(String controller) {
            return Optional.ofNullable(dirs.get(controller));
        }

        /** Every process in any of the sandbox's groups. */
        List<Long> allProcs() {
            List<Long> all = new ArrayList<>();
            for (Path d : dirs.values()) {
                for (long pid : procs(d, true)) {
                    if (!all.contains(pid)) {
                        all.add(pid);
                    }
                }
            }
            return all;
        }

        /** Whether the sandbox has a freezer group. */
        boolean hasFreezer() {
            return dirs.containsKey(FREEZER);
        }

        /**
         * Freezes every process in the sandbox (and any that joins later) and returns once all are frozen.
         *
         * @throws IOException when there is no freezer group, or the processes did not all freeze within
         *                     {@code timeoutMillis} (a process stuck in the kernel); the group is thawed again then
         */
        void freeze(long timeoutMillis) throws IOException {
            Path dir = dirs.get(FREEZER);
            if (dir == null) {
                throw new IOException("the sandbox has no freezer group");
            }
            Path state = dir.resolve("freezer.state");
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            long pause = 50_000;
            while (true) {
                write(state, "FROZEN"); // again while FREEZING: the kernel retries the tasks it could not freeze
                if (Files.readString(state, StandardCharsets.US_ASCII).trim().equals("FROZEN")) {
                    return;
                }
                if (System.nanoTime() > deadline) {
                    Cgroups.thaw(dir);
                    throw new IOException("not every process of the sandbox could be frozen within "
                            + timeoutMillis + " ms (one is busy in the kernel); try again");
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(pause * 2, 20_000_000);
            }
        }

        /** Lets the processes of a frozen sandbox continue; does nothing when it is not frozen. */
        void thaw() throws IOException {
            Path dir = dirs.get(FREEZER);
            if (dir != null) {
                write(dir.resolve("freezer.state"), "THAWED");
            }
        }

        /** Kills anything left and removes every group of the sandbox. */
        void remove() {
            Path freezer = dirs.get(FREEZER);
            if (freezer != null) {
                Cgroups.thaw(freezer); // frozen processes do not die until thawed
            }
            pidsGroup().ifPresent(g -> g.killAll(5_000));
            for (Path d : dirs.values()) {
                for (long pid : procs(d, true)) {
                    if (pid != Procfs.SELF) {
                        HostSignals.signal(pid, HostSignals.SIGKILL);
                    }
                }
                removeTree(d, 5_000);
            }
        }
    }

    /** What an exec joins: the sandbox's cpu and memory groups and its own pids group (absent without pids). */
    record ExecGroup(List<Path> procsFiles, Group pids) {
    }

    /** A pids group with everything below it. */
    static final class Group {
        final Path dir;

        Group(Path dir) {
            this.dir = dir;
        }

        List<Long> procs() {
            return Cgroups.procs(dir, true);
        }

        /**
         * Forbids new processes in the group, then SIGKILLs every process in it (and its sub-groups) until none is
         * left or {@code timeoutMillis} passed. Returns whether the group is empty.
         */
        boolean killAll(long timeoutMillis) {
            freezeForks(dir);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            long pause = 20_000;
            while (true) {
                List<Long> left = procs();
                left.remove(Procfs.SELF);
                if (left.isEmpty()) {
                    return true;
                }
                for (long pid : left) {
                    HostSignals.signal(pid, HostSignals.SIGKILL);
                }
                if (System.nanoTime() > deadline) {
                    return false;
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(pause * 2, 5_000_000);
            }
        }

        /** Removes the group if nothing runs in it any more; returns whether it is gone. */
        boolean removeIfEmpty() {
            if (!procs().isEmpty()) {
                return false;
            }
            try {
                rmdir(dir);
                return true;
            } catch (IOException e) {
                return false;
            }
        }

        private static void freezeForks(Path dir) {
            try {
                write(dir.resolve("pids.max"), "0");
            } catch (IOException e) {
                // the group is already gone
            }
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, Files::isDirectory)) {
                for (Path child : ds) {
                    freezeForks(child);
                }
            } catch (IOException e) {
                // the group is already gone
            }
        }
    }

    static List<Long> procs(Path dir, boolean recursive) {
        List<Long> pids = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(dir.resolve("cgroup.procs"), StandardCharsets.US_ASCII)) {
                if (!line.isBlank()) {
                    pids.add(Long.parseLong(line.trim()));
                }
            }
        } catch (IOException e) {
            return pids;
        }
        if (recursive) {
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, Files::isDirectory)) {
                for (Path child : ds) {
                    pids.addAll(procs(child, true));
                }
            } catch (IOException e) {
                // gone meanwhile
            }
        }
        return pids;
    }

    /** Removes a group and its sub-groups, deepest first, retrying while exiting tasks still hold them. */
    static void removeTree(Path dir, long timeoutMillis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, Files::isDirectory)) {
            for (Path child : ds) {
                removeTree(child, timeoutMillis);
            }
        } catch (IOException e) {
            return;
        }
        long pause = 100_000;
        while (true) {
            try {
                rmdir(dir);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    return;
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(pause * 2, 20_000_000);
            }
        }
    }

    private static void rmdir(Path dir) throws IOException {
        try {
            Files.delete(dir); // rmdir(2); a cgroup directory's control files are not real files
        } catch (NoSuchFileException e) {
            // already gone
        } catch (FileSystemException e) {
            throw new IOException("cannot remove cgroup " + dir + ": " + e.getReason(), e);
        }
    }

    /** Thaws a freezer group, quietly: it may be gone already. */
    private static void thaw(Path freezerGroup) {
        try {
            write(freezerGroup.resolve("freezer.state"), "THAWED");
        } catch (IOException e) {
            // gone already
        }
    }

    static void write(Path file, String value) throws IOException {
        Files.writeString(file, value, StandardCharsets.US_ASCII);
    }

    /** A v1 hierarchy's mount: where it is mounted and which group of the hierarchy is its root. */
    private record Mount(Path point, String root) {
        /** The host directory of {@code group} (a path as {@code /proc/self/cgroup} shows it). */
        Path dirOf(String group) {
            String rel = group;
            if (!root.equals("/") && (group.equals(root) || group.startsWith(root + "/"))) {
                rel = group.substring(root.length());
            }
            rel = rel.startsWith("/") ? rel.substring(1) : rel;
            return rel.isEmpty() ? point : point.resolve(rel);
        }
    }

    /** The v1 hierarchies mounted for each controller. */
    private static Map<String, Mount> v1Mounts() throws IOException {
        Map<String, Mount> mounts = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"), StandardCharsets.UTF_8)) {
            String[] parts = line.split(" - ", 2);
            if (parts.length < 2) {
                continue;
            }
            String[] tail = parts[1].split(" ");
            if (tail.length < 3 || !tail[0].equals("cgroup")) {
                continue;
            }
            String[] head = parts[0].split(" ");
            Mount mount = new Mount(Path.of(unescape(head[4])), unescape(head[3]));
            for (String option : tail[2].split(",")) {
                if (ALL.contains(option)) {
                    mounts.putIfAbsent(option, mount);
                }
            }
        }
        return mounts;
    }

    /** This process's group in each controller's hierarchy, as {@code /proc/self/cgroup} shows it. */
    private static Map<String, String> ownGroups() throws IOException {
        Map<String, String> own = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"), StandardCharsets.UTF_8)) {
            String[] f = line.split(":", 3);
            if (f.length < 3) {
                continue;
            }
            for (String controller : f[1].split(",")) {
                if (ALL.contains(controller)) {
                    own.put(controller, f[2]);
                }
            }
        }
        return own;
    }

    private static String unescape(String s) {
        return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\");
    }
}
