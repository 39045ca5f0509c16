package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The cgroup v2 group of one sandbox: limits on {@code dir}, processes in its leaves {@code init} and {@code x<n>}
 * (see {@link CgroupV2}).
 */
final class V2SandboxCgroup implements SandboxCgroup {

    private final Path dir;
    private final List<String> controllers;
    private final boolean freezer;
    private final boolean kill;
    private final AtomicLong execs = new AtomicLong();

    V2SandboxCgroup(Path dir, List<String> controllers, boolean freezer, boolean kill) {
        this.dir = dir;
        this.controllers = controllers;
        this.freezer = freezer;
        this.kill = kill;
    }

    @Override
    public List<Path> initProcsFiles() {
        return List.of(dir.resolve("init").resolve("cgroup.procs"));
    }

    /** The exec joins a leaf of its own below the sandbox's group, which holds the limits for all of them. */
    @Override
    public ExecCgroup newExec() throws IOException {
        Path own = dir.resolve("x" + execs.incrementAndGet());
        Files.createDirectory(own);
        return new ExecCgroup(List.of(own.resolve("cgroup.procs")), new V2Group(own, kill, freezer));
    }

    @Override
    public Optional<ProcessGroup> processGroup() {
        return Optional.of(new V2Group(dir, kill, freezer));
    }

    @Override
    public Optional<Path> dir(String controller) {
        return controllers.contains(controller) || (controller.equals("freezer") && freezer)
                ? Optional.of(dir)
                : Optional.empty();
    }

    @Override
    public List<Long> allProcs() {
        return CgroupFiles.procs(dir, true);
    }

    @Override
    public boolean hasFreezer() {
        return freezer;
    }

    /**
     * Sets {@code cgroup.freeze} and waits for {@code cgroup.events} to say {@code frozen 1}: the kernel freezes
     * the tasks as each next reaches a safe point, and reports the whole group once all have.
     */
    @Override
    public void freeze(long timeoutMillis) throws IOException {
        if (!freezer) {
            throw new IOException("the sandbox has no freezer group");
        }
        CgroupFiles.write(dir.resolve("cgroup.freeze"), "1");
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        long pause = 50_000;
        while (!V2Group.events(dir).contains("frozen 1")) {
            if (System.nanoTime() > deadline) {
                CgroupFiles.writeQuietly(dir.resolve("cgroup.freeze"), "0");
                throw new IOException(SandboxCgroup.freezeTimedOut(timeoutMillis));
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, 20_000_000);
        }
    }

    @Override
    public void thaw() throws IOException {
        if (freezer) {
            CgroupFiles.write(dir.resolve("cgroup.freeze"), "0");
        }
    }

    @Override
    public void remove() {
        if (freezer) {
            // v2 lets fatal signals through a freeze, but a thawed group ends sooner and is left as found if it stays
            CgroupFiles.writeQuietly(dir.resolve("cgroup.freeze"), "0");
        }
        new V2Group(dir, kill, freezer).killAll(5_000);
        for (long pid : CgroupFiles.procs(dir, true)) {
            if (pid != Procfs.SELF) {
                HostSignals.signal(pid, HostSignals.SIGKILL);
            }
        }
        CgroupFiles.removeTree(dir, 5_000);
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}
