package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.image.BuildLimits;
import ai.chalk.compute.server.image.BuildLog;
import ai.chalk.compute.server.runtime.OutputLines;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupEntry;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.local.mount.BubblewrapMounts;
import ai.chalk.compute.server.runtime.local.mount.MountOp;
import ai.chalk.compute.server.runtime.network.Egress;
import ai.chalk.compute.server.runtime.seccomp.SyscallFilter;
import ai.chalk.compute.server.runtime.userns.IdRange;
import ai.chalk.compute.server.runtime.userns.SandboxPipes;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Runs one build command ({@code /bin/sh -c COMMAND}) in a bubblewrap sandbox over a build overlay, as
 * {@code docker build} runs a RUN step: root with Docker's default capability set only
 * ({@link #CAPABILITIES}; no_new_privs, which bubblewrap always sets), in a user namespace of its own where the host
 * allows (so that root and those capabilities are an unprivileged id range's outside, as in a sandbox, see
 * {@link ai.chalk.compute.server.runtime.userns.UserNamespace}), its own pid, ipc, uts and network namespaces,
 * the network with the egress of a sandbox ({@link BuildNetwork}: steps fetch packages, but never from the host or
 * cloud metadata) and slirp's resolver as {@code /etc/resolv.conf}, {@code /proc/sys} and the other kernel knobs
 * under {@code /proc} read-only, a fresh {@code /dev}, and a time limit. Every writable
 * file system is {@code nodev}, so a device node a step creates (it may: MKNOD) cannot be opened.
 */
final class BuildStepRunner {

    /** Docker's default capabilities but NET_RAW. */
    /** The directory of a step's device nodes ({@link SandboxDevices#create}) on the file system of its {@code /dev}. */
    static final String NODES = "nodes";

    static final List<String> CAPABILITIES = List.of(
            "CAP_CHOWN",
            "CAP_DAC_OVERRIDE",
            "CAP_FSETID",
            "CAP_FOWNER",
            "CAP_MKNOD",
            "CAP_SETGID",
            "CAP_SETUID",
            "CAP_SETFCAP",
            "CAP_SETPCAP",
            "CAP_NET_BIND_SERVICE",
            "CAP_SYS_CHROOT",
            "CAP_KILL",
            "CAP_AUDIT_WRITE");
    /** The descriptor bubblewrap reads the steps' syscall filter from ({@code --seccomp}). */
    private static final int FILTER_FD = 3;

    /** How many of the last output lines a failure quotes. */
    static final int TAIL = 20;

    /**
     * How a command ended: its exit code (-1 when the runner stopped it), why the runner stopped it (null when it
     * ended by itself) and its last lines of output.
     */
    record Outcome(int exitCode, @Nullable String stopped, List<String> tail) {}

    /**
     * What a step may take: its time, its {@link BuildLimits}, and the disk: a step is stopped once the file system
     * its layer is written to has less than {@code diskReserveBytes} left (as the kubelet evicts pods when a node's
     * disk runs low), so that a step writing without end fills the build's share of the disk, not the server's store
     * and every sandbox's.
     */
    record Bounds(Duration timeout, BuildLimits limits, long diskReserveBytes) {}

    /** How often a running step's disk is looked at. */
    static final long DISK_CHECK_MILLIS = 100;

    /**
     * What the step runs first, in the image's shell with the step's capabilities: it waits on stdin until the server
     * has set up the step's network, then runs the command ({@code $1}) with stdin from {@code /dev/null}.
     */
    static final String GATE = "exec 4<&-; read -r chalk_go || exit 125; exec /bin/sh -c \"$1\" </dev/null";

    private final BuildTools tools;
    private final BuildNetwork network;
    /** The ids of the cgroups of the steps running now. */
    private final Set<String> groupsInUse = ConcurrentHashMap.newKeySet();
    /** Set by {@link #stopAll}: no step starts after it. */
    private volatile boolean stopped;
    /** The cgroups of the steps running now, once made. */
    private final Map<String, SandboxCgroup> groups = new ConcurrentHashMap<>();

    /** Where the steps' syscall filter is written, by the first step. */
    private final Path filterFile;

    private boolean filterWritten;

    BuildStepRunner(BuildTools tools, BuildNetwork network, Path filterFile) {
        this.tools = tools;
        this.network = network;
        this.filterFile = filterFile;
    }

    /** The steps' syscall filter ({@link SyscallFilter#forBuildSteps}), which bubblewrap installs before the step runs. */
    private synchronized Path filter() throws IOException {
        if (!filterWritten) {
            try {
                SyscallFilter.forBuildSteps()
                        .writeTo(
                                filterFile.getParent(), filterFile.getFileName().toString());
            } catch (IllegalStateException e) {
                throw new IOException(
                        "build steps run only under a syscall filter, which cannot be built here: " + e.getMessage());
            }
            filterWritten = true;
        }
        return filterFile;
    }

    /** Why steps have no network here, when they have none. */
    Optional<String> networkProblem() {
        return network.problem();
    }

    /**
     * Runs {@code command} in {@code root} (a mounted build overlay), its output to {@code log} line by line, with the
     * {@code /dev} made on the file system at {@code dev} (its {@link #NODES}, {@link SandboxDevices#DEV} and
     * {@link SandboxDevices#SHM} directories) and the terminals of the {@code devpts} mounted at {@code ptys}, in
     * cgroups of its own with the limits of {@code bounds}
     * where this host has cgroups (its open-file limit everywhere), stopped when it runs out of time or the disk below
     * {@code root} runs low.
     */
    Outcome run(
            Path root,
            Path dev,
            Path ptys,
            String workdir,
            Map<String, String> env,
            String command,
            Bounds bounds,
            BuildLog log,
            Optional<UserNamespace> userns)
            throws IOException, InterruptedException {
        List<String> c = new ArrayList<>(List.of(
                tools.bwrap().toString(),
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--unshare-net",
                "--hostname",
                "chalk-build",
                "--die-with-parent",
                "--cap-drop",
                "ALL"));
        if (userns.isEmpty()) {
            for (String cap : CAPABILITIES) {
                c.addAll(List.of("--cap-add", cap));
            }
        } else {
            // for joining the step's user namespace, whose owner is its range's first id, not root; joining takes
            // every capability on the host away
            c.addAll(List.of("--cap-add", "CAP_SYS_ADMIN"));
        }
        c.addAll(List.of(
                "--bind", root.toString(), "/", "--ro-bind", tools.helpersDir().toString(), tools.mount()));
        c.addAll(List.of("--ro-bind", network.resolvConf().toString(), "/etc/resolv.conf"));
        // a sandbox's /proc: where a step's root is the host's root, with DAC_OVERRIDE, only a read-only or masked
        // entry keeps it from the host's root-writable ones (/proc/acpi, /proc/dynamic_debug ...)
        c.addAll(tools.proc());
        // the step's own nodes in a /dev of its own, never the host's: bubblewrap's --dev binds the host's, which a
        // step whose root is the host's root (no user namespace of its own) changed with its CHOWN and FOWNER
        List<MountOp> devOps = new ArrayList<>();
        devOps.add(new MountOp.Dev("/dev", dev.resolve(SandboxDevices.DEV), ptys, dev.resolve(SandboxDevices.SHM), 0));
        for (SandboxDevices.Node n : SandboxDevices.NODES) {
            devOps.add(new MountOp.DeviceNode(
                    "/dev/" + n.name(), dev.resolve(NODES).resolve(n.name()), n.major(), n.minor()));
        }
        c.addAll(BubblewrapMounts.render(devOps)); // as a sandbox's /dev is bound
        c.addAll(List.of("--chdir", workdir, "--clearenv"));
        // the last thing bubblewrap does before it runs the step, capabilities dropped but the joining one
        c.addAll(List.of("--seccomp", Integer.toString(FILTER_FD)));
        if (userns.isEmpty()) {
            env.forEach((k, v) -> c.addAll(List.of("--setenv", k, v)));
        }
        // bubblewrap, run as root, keeps the kept capabilities but not a narrower bounding set: setpriv narrows it
        // (it runs with the step's own capabilities, so what it loads from the image could do no more than the step)
        c.add("--");
        if (userns.isPresent()) {
            // the step's capabilities are its user namespace's: root there is an id of its own range outside; joining
            // it takes CAP_SYS_ADMIN on the host (its owner is that id, not root), which is why the joining program
            // is static and loads nothing from the image; the mounts above are the host's
            c.addAll(tools.nsenter());
            c.addAll(List.of("--user=/proc/self/fd/4", "--"));
            // the step's variables (the image's and the spec's) only once the namespace is joined: nothing of the
            // image, GLIBC_TUNABLES and its kin included, reaches a process that holds a capability on the host
            c.addAll(tools.env());
            c.addAll(List.of("-i", "--")); // a name from the image's configuration is never an option
            env.forEach((k, v) -> c.add(k + "=" + v));
        }
        c.addAll(tools.setpriv());
        StringBuilder bounding = new StringBuilder("--bounding-set=-all");
        CAPABILITIES.forEach(cap ->
                bounding.append(",+").append(cap.substring("CAP_".length()).toLowerCase(java.util.Locale.ROOT)));
        c.addAll(List.of(bounding.toString(), "--", "/bin/sh", "-c", GATE, "chalk-step", command));
        BuildLimits limits = bounds.limits();
        String id = "build-" + UUID.randomUUID().toString().replace("-", "").substring(0, 20);
        SandboxCgroup group = null;
        groupsInUse.add(id);
        try {
            group = tools.cgroups().any()
                    ? tools.cgroups()
                            .create(
                                    id,
                                    new ResourceLimits(
                                            Optional.of(limits.milliCpus()), Optional.of(limits.memoryBytes())),
                                    limits.processes())
                    : null;
            if (group != null) {
                groups.put(id, group);
                if (stopped) { // the runtime closed while this step started
                    throw new IOException("the local runtime is closing");
                }
            }
            // bubblewrap is born in the step's groups, with its open-file limit, and so is everything of the step
            List<CgroupEntry.OpenFile> open = new ArrayList<>(List.of(new CgroupEntry.OpenFile(FILTER_FD, filter())));
            userns.ifPresent(ns -> open.add(new CgroupEntry.OpenFile(4, ns.path())));
            List<String> confined = CgroupEntry.command(
                    group == null ? List.of() : group.initProcsFiles(), limits.openFiles(), open, c);
            return run(
                    confined,
                    group,
                    bounds,
                    Files.getFileStore(root.getParent()),
                    log,
                    userns.map(UserNamespace::range));
        } finally {
            if (group != null) {
                group.remove(); // and with it anything of the step still running
                groups.remove(id);
            }
            groupsInUse.remove(id);
        }
    }

    /**
     * Kills every step running now, which then fails: for a runtime that closes, so that no step outlives it in
     * groups it no longer owns.
     */
    void stopAll() {
        stopped = true;
        groups.values().forEach(SandboxCgroup::remove);
    }

    /** Whether {@code groupId} is the cgroup of a step running now, not one an earlier server left behind. */
    boolean runs(String groupId) {
        return groupsInUse.contains(groupId);
    }

    /** @param ids the step's ids, when it has a user namespace of its own: its root gets the step's pipes */
    private Outcome run(
            List<String> command,
            @Nullable SandboxCgroup group,
            Bounds bounds,
            FileStore disk,
            BuildLog log,
            Optional<IdRange> ids)
            throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(new File("/")).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        Process p = pb.start();
        Deque<String> tail = new ArrayDeque<>();
        Thread reader = DaemonThreads.start("chalk-build-output", () -> forward(p, log, tail));
        Optional<Egress> egress = Optional.empty();
        try {
            egress = network.attach(p, group, bounds.limits().openFiles());
            // the step's standard streams are pipes this server made as the host's root: given to the step's root
            // before the gate opens, so that it can open them by name (echo x > /dev/stdout), as an exec can
            ids.ifPresent(range -> SandboxPipes.giveTo(p, range));
            try (OutputStream go = p.getOutputStream()) {
                go.write('\n');
            } catch (IOException e) {
                // the step ended already; its outcome says how
            }
            long deadline = System.nanoTime() + bounds.timeout().toNanos();
            String stopped = null;
            while (stopped == null && !p.waitFor(DISK_CHECK_MILLIS, TimeUnit.MILLISECONDS)) {
                long free = disk.getUsableSpace();
                if (free < bounds.diskReserveBytes()) {
                    stopped = "was stopped when the server's disk had " + (free >> 20) + " MiB left (build steps"
                            + " leave it " + (bounds.diskReserveBytes() >> 20) + " MiB)";
                } else if (System.nanoTime() > deadline) {
                    stopped = "did not finish within " + bounds.timeout().toSeconds() + " s";
                }
            }
            if (stopped != null) {
                p.destroyForcibly(); // bubblewrap's --die-with-parent takes the step's processes with it
                p.waitFor(10, TimeUnit.SECONDS);
                reader.join(2000);
                return new Outcome(-1, stopped, tail(tail));
            }
            reader.join(10_000);
            return new Outcome(p.exitValue(), null, tail(tail));
        } catch (InterruptedException | IOException e) {
            p.destroyForcibly();
            throw e;
        } finally {
            egress.ifPresent(Egress::close);
        }
    }

    private static void forward(Process p, BuildLog log, Deque<String> tail) {
        try {
            OutputLines.forEach(p.getInputStream(), OutputLines.MAX_CHARS, line -> {
                log.line(line);
                synchronized (tail) {
                    tail.addLast(line);
                    if (tail.size() > TAIL) {
                        tail.removeFirst();
                    }
                }
            });
        } catch (IOException e) {
            // the step ended
        }
    }

    private static List<String> tail(Deque<String> tail) {
        synchronized (tail) {
            return List.copyOf(tail);
        }
    }
}
