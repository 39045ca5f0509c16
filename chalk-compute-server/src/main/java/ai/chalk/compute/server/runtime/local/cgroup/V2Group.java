package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A cgroup v2 group with everything below it. {@code cgroup.kill} SIGKILLs the whole subtree at once, forks in flight
 * included; on kernels without it (before 5.14) the group is frozen first, so that nothing forks between the listing
 * and the signals (v2 lets fatal signals through a freeze), and thawed again once the killing is done.
 */
final class V2Group implements ProcessGroup {

    private final Path dir;
    private final boolean kill;
    private final boolean freezer;

    V2Group(Path dir, boolean kill, boolean freezer) {
        this.dir = dir;
        this.kill = kill;
        this.freezer = freezer;
    }

    @Override
    public List<Long> procs() {
        return CgroupFiles.procs(dir, true);
    }

    /** Never freezes or kills by group file while the server itself is in the group: it would stop itself. */
    @Override
    public boolean killAll(long timeoutMillis) {
        boolean self = procs().contains(Procfs.SELF);
        boolean froze = !kill && freezer && !self;
        if (froze) {
            CgroupFiles.writeQuietly(dir.resolve("cgroup.freeze"), "1");
        }
        try {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            long pause = 20_000;
            while (true) {
                List<Long> left = procs();
                self = left.remove(Procfs.SELF);
                if (left.isEmpty()) {
                    return true;
                }
                if (kill && !self) {
                    CgroupFiles.writeQuietly(dir.resolve("cgroup.kill"), "1");
                } else {
                    for (long pid : left) {
                        HostSignals.signal(pid, HostSignals.SIGKILL);
                    }
                }
                if (System.nanoTime() > deadline) {
                    return false;
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(pause * 2, 5_000_000);
            }
        } finally {
            if (froze) {
                CgroupFiles.writeQuietly(dir.resolve("cgroup.freeze"), "0");
            }
        }
    }

    @Override
    public boolean removeIfEmpty() {
        if (!procs().isEmpty()) {
            return false;
        }
        try {
            CgroupFiles.rmdir(dir);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The lines of a group's {@code cgroup.events} ({@code populated 0|1}, {@code frozen 0|1}); empty when gone. */
    static List<String> events(Path dir) {
        try {
            return List.of(CgroupFiles.read(dir.resolve("cgroup.events")).split("\n"));
        } catch (IOException e) {
            return List.of();
        }
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}
