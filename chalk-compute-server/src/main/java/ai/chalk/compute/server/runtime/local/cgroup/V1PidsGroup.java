package ai.chalk.compute.server.runtime.local.cgroup;

import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/** A cgroup v1 {@code pids} group with everything below it: forks stop at {@code pids.max} 0, then all is killed. */
final class V1PidsGroup implements ProcessGroup {

    private final Path dir;

    V1PidsGroup(Path dir) {
        this.dir = dir;
    }

    @Override
    public List<Long> procs() {
        return CgroupFiles.procs(dir, true);
    }

    @Override
    public boolean killAll(long timeoutMillis) {
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

    private static void freezeForks(Path dir) {
        CgroupFiles.writeQuietly(dir.resolve("pids.max"), "0"); // the group may be gone already
        for (Path child : CgroupFiles.subGroups(dir)) {
            freezeForks(child);
        }
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}
