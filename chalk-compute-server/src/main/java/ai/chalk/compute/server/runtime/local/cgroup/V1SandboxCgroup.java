package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/** The cgroup v1 groups of one sandbox: one per hierarchy in use, by controller (see {@link CgroupV1}). */
final class V1SandboxCgroup implements SandboxCgroup {

    private final Map<String, Path> dirs;
    private final AtomicLong execs = new AtomicLong();

    V1SandboxCgroup(Map<String, Path> dirs) {
        this.dirs = dirs;
    }

    @Override
    public List<Path> initProcsFiles() {
        List<Path> files = new ArrayList<>();
        dirs.forEach((c, d) -> files.add((c.equals("pids") ? d.resolve("init") : d).resolve("cgroup.procs")));
        return files;
    }

    /** The exec joins the sandbox's cpu, memory and freezer groups, and a pids group of its own. */
    @Override
    public ExecCgroup newExec() throws IOException {
        Path pids = dirs.get("pids");
        Path own = null;
        if (pids != null) {
            own = pids.resolve("x" + execs.incrementAndGet());
            Files.createDirectory(own);
        }
        List<Path> files = new ArrayList<>();
        for (Map.Entry<String, Path> e : dirs.entrySet()) {
            files.add((e.getKey().equals("pids") ? own : e.getValue()).resolve("cgroup.procs"));
        }
        return new ExecCgroup(files, own == null ? null : new V1PidsGroup(own));
    }

    /** The sandbox's whole pids group (init and every exec), when the pids controller is in use. */
    @Override
    public Optional<ProcessGroup> processGroup() {
        return Optional.ofNullable(dirs.get("pids")).map(V1PidsGroup::new);
    }

    @Override
    public Optional<Path> dir(String controller) {
        return Optional.ofNullable(dirs.get(controller));
    }

    @Override
    public List<Long> allProcs() {
        List<Long> all = new ArrayList<>();
        for (Path d : dirs.values()) {
            for (long pid : CgroupFiles.procs(d, true)) {
                if (!all.contains(pid)) {
                    all.add(pid);
                }
            }
        }
        return all;
    }

    @Override
    public boolean hasFreezer() {
        return dirs.containsKey(CgroupV1.FREEZER);
    }

    @Override
    public void freeze(long timeoutMillis) throws IOException {
        Path dir = dirs.get(CgroupV1.FREEZER);
        if (dir == null) {
            throw new IOException("the sandbox has no freezer group");
        }
        Path state = dir.resolve("freezer.state");
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        long pause = 50_000;
        while (true) {
            CgroupFiles.write(
                    state, "FROZEN"); // again while FREEZING: the kernel retries the tasks it could not freeze
            if (CgroupFiles.read(state).equals("FROZEN")) {
                return;
            }
            if (System.nanoTime() > deadline) {
                thawQuietly(dir);
                throw new IOException(SandboxCgroup.freezeTimedOut(timeoutMillis));
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, 20_000_000);
        }
    }

    @Override
    public void thaw() throws IOException {
        Path dir = dirs.get(CgroupV1.FREEZER);
        if (dir != null) {
            CgroupFiles.write(dir.resolve("freezer.state"), "THAWED");
        }
    }

    @Override
    public void remove() {
        Path freezer = dirs.get(CgroupV1.FREEZER);
        if (freezer != null) {
            thawQuietly(freezer); // frozen processes do not die until thawed
        }
        processGroup().ifPresent(g -> g.killAll(5_000));
        for (Path d : dirs.values()) {
            for (long pid : CgroupFiles.procs(d, true)) {
                if (pid != Procfs.SELF) {
                    HostSignals.signal(pid, HostSignals.SIGKILL);
                }
            }
            CgroupFiles.removeTree(d, 5_000);
        }
    }

    /** Thaws a freezer group, quietly: it may be gone already. */
    static void thawQuietly(Path freezerGroup) {
        CgroupFiles.writeQuietly(freezerGroup.resolve("freezer.state"), "THAWED");
    }
}
