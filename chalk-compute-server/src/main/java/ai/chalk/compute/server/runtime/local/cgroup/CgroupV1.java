package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.network.TcpMemory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Cgroup v1: a hierarchy per controller. The runtime's base group is made in the {@code cpu}, {@code memory} and
 * {@code pids} hierarchies; a sandbox gets {@code <id>} below each, and in the pids hierarchy one sub-group
 * {@code init} for its init and one {@code x<n>} per exec, which is how {@link V1PidsGroup#killAll} reaches every
 * process an exec started, daemons included.
 *
 * <p>Where the {@code freezer} hierarchy is usable too, a sandbox also gets a freezer group {@code <id>} that its
 * init and every exec join like the cpu and memory groups; freezing it stops everything in the sandbox at once
 * (suspend, consistent snapshots).
 */
public final class CgroupV1 implements CgroupDriver {

    /** The controller that suspends a sandbox, used in addition to the limits where it is available. */
    static final String FREEZER = "freezer";

    static final List<String> ALL = List.of("cpu", "memory", "pids", FREEZER);

    private final Map<String, Path> base;
    private final String problem;
    private final String freezerProblem;

    private CgroupV1(Map<String, Path> base, String problem, String freezerProblem) {
        this.base = base;
        this.problem = problem;
        this.freezerProblem = base.containsKey(FREEZER)
                ? null
                : freezerProblem != null ? freezerProblem : problem != null ? problem : "freezer is not usable";
    }

    /** Finds writable v1 hierarchies for the controllers among {@code mounts} and prepares the base groups. */
    static CgroupV1 detect(String key, CgroupMounts mounts) {
        Map<String, Path> usable = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        String freezerProblem = null;
        for (String controller : ALL) {
            CgroupMount mount = mounts.v1().get(controller);
            String failure;
            Path dir = null;
            if (mount == null) {
                failure = controller + " is not mounted";
            } else {
                dir = mount.dirOf(mounts.v1Own().getOrDefault(controller, "/"))
                        .resolve("chalk-compute")
                        .resolve(key);
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
        return new CgroupV1(
                Collections.unmodifiableMap(usable),
                problems.isEmpty() ? null : String.join("; ", problems),
                freezerProblem);
    }

    private static String probe(String controller, Path dir) {
        Path test = dir.resolve("probe-" + ProcessHandle.current().pid());
        try {
            Files.createDirectories(dir);
            CgroupFiles.rmdir(test);
            Files.createDirectory(test);
            try {
                switch (controller) {
                    case "cpu" -> CgroupFiles.write(test.resolve("cpu.cfs_quota_us"), "-1");
                    case "memory" -> CgroupFiles.write(test.resolve("memory.limit_in_bytes"), "-1");
                    case "pids" -> CgroupFiles.write(test.resolve("pids.max"), "max");
                    case FREEZER -> CgroupFiles.write(test.resolve("freezer.state"), "THAWED");
                    default -> throw new IllegalArgumentException(controller);
                }
                if (!Files.isWritable(test.resolve("cgroup.procs"))) {
                    return controller + " group " + dir + " is not writable";
                }
            } finally {
                CgroupFiles.rmdir(test);
            }
            return null;
        } catch (IOException e) {
            return controller + " group " + dir + " is not usable (" + e.getMessage() + ")";
        }
    }

    @Override
    public String version() {
        return "cgroup v1";
    }

    @Override
    public List<String> controllers() {
        return base.keySet().stream().filter(CONTROLLERS::contains).toList();
    }

    @Override
    public boolean has(String controller) {
        return base.containsKey(controller);
    }

    @Override
    public boolean any() {
        return !base.isEmpty();
    }

    /** Only with the {@code pids} hierarchy: the freezer, cpu and memory groups are per sandbox, not per exec. */
    @Override
    public boolean tracksExecs() {
        return base.containsKey("pids");
    }

    @Override
    public boolean freezer() {
        return base.containsKey(FREEZER);
    }

    @Override
    public String freezerName() {
        return "cgroup v1 freezer";
    }

    @Override
    public Optional<String> freezerProblem() {
        return Optional.ofNullable(freezerProblem);
    }

    @Override
    public Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    /**
     * Charges the TCP buffers of the group's sockets to it, up to {@code bytes} (see
     * {@link TcpMemory#forOneSandbox}). Cgroup v1 counts them against no group unless this limit is set,
     * and the kernel's TCP memory ({@code net.ipv4.tcp_mem}) is one pool for the whole host: without it, a 64 MiB
     * sandbox writing into connections nobody reads (on its own loopback, or through slirp4netns) held 600 MB of it,
     * and one with more connections could take the host's TCP into memory pressure and then to its limit, where no
     * socket of the host, the server's included, gets buffers. Absent on kernels that no longer have it (it is
     * deprecated), where v2 is the way to limit them.
     */
    private static void limitSocketBuffers(Path memory, String bytes) throws IOException {
        Path tcp = memory.resolve("memory.kmem.tcp.limit_in_bytes");
        if (Files.exists(tcp)) {
            CgroupFiles.write(tcp, bytes);
        }
    }

    @Override
    public SandboxCgroup create(String id, ResourceLimits limits, long pidsMax) throws IOException {
        Map<String, Path> dirs = new LinkedHashMap<>();
        if (base.values().stream().anyMatch(d -> Files.exists(d.resolve(id)))) {
            removeSandbox(id); // leftovers of an earlier sandbox with this id
        }
        try {
            for (Map.Entry<String, Path> e : base.entrySet()) {
                Path dir = e.getValue().resolve(id);
                Files.createDirectories(e.getValue()); // the base goes when the runtime closes with no sandbox left
                SandboxesCap.ofHost().writeV1(e.getKey(), e.getValue()); // all sandboxes together
                Files.createDirectory(dir);
                dirs.put(e.getKey(), dir);
            }
            Path cpu = dirs.get("cpu");
            if (cpu != null && limits.milliCpus().isPresent()) {
                long quota = Math.max(1_000, limits.milliCpus().get() * CFS_PERIOD_US / 1_000);
                CgroupFiles.write(cpu.resolve("cpu.cfs_period_us"), Long.toString(CFS_PERIOD_US));
                CgroupFiles.write(cpu.resolve("cpu.cfs_quota_us"), Long.toString(quota));
            }
            Path memory = dirs.get("memory");
            if (memory != null && limits.memoryBytes().isPresent()) {
                String bytes = Long.toString(limits.memoryBytes().get());
                CgroupFiles.write(memory.resolve("memory.limit_in_bytes"), bytes);
                Path memsw = memory.resolve("memory.memsw.limit_in_bytes");
                if (Files.exists(memsw)) {
                    try {
                        CgroupFiles.write(memsw, bytes); // no swapping past the limit either
                    } catch (IOException e) {
                        // swap accounting off: the memory limit alone applies
                    }
                }
                limitSocketBuffers(
                        memory,
                        Long.toString(
                                TcpMemory.forOneSandbox(limits.memoryBytes().get())));
            }
            Path pids = dirs.get("pids");
            if (pids != null) {
                CgroupFiles.write(pids.resolve("pids.max"), Long.toString(pidsMax));
                Files.createDirectory(pids.resolve("init"));
            }
            return new V1SandboxCgroup(dirs);
        } catch (IOException e) {
            for (Path dir : dirs.values()) {
                CgroupFiles.removeTree(dir, 1_000);
            }
            throw e;
        }
    }

    @Override
    public Collection<Path> baseDirs() {
        return List.copyOf(base.values());
    }

    @Override
    public void removeSandbox(String id) {
        Path freezer = base.get(FREEZER);
        if (freezer != null && Files.isDirectory(freezer.resolve(id))) {
            V1SandboxCgroup.thawQuietly(freezer.resolve(id)); // frozen processes do not die until thawed
        }
        Path pids = base.get("pids");
        if (pids != null && Files.isDirectory(pids.resolve(id))) {
            new V1PidsGroup(pids.resolve(id)).killAll(5_000);
        }
        for (Path dir : base.values()) {
            Path sandbox = dir.resolve(id);
            if (Files.isDirectory(sandbox)) {
                for (long pid : CgroupFiles.procs(sandbox, true)) {
                    if (pid != Procfs.SELF) {
                        HostSignals.signal(pid, HostSignals.SIGKILL);
                    }
                }
                CgroupFiles.removeTree(sandbox, 2_000);
            }
        }
    }
}
