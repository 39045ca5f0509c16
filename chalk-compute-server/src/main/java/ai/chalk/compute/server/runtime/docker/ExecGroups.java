package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One cgroup per exec, nested in the container's own, so that {@link #killAll} reaches every process an exec
 * started, daemons that left its process tree included. Uses the cgroup v1 {@code pids} hierarchy (or the unified
 * cgroup v2 hierarchy on hosts that have only that), which docker itself puts each container into; a sub-group
 * changes no limit (they stay on the container's group) and is removed with the container's group by the engine
 * (runc removes nested groups) or when its exec ends and it is empty.
 *
 * <p>Only usable when the engine runs on this host and this server may write the cgroup file system (root).
 */
final class ExecGroups {

    private final Path containerGroup;
    private final String kind;

    private ExecGroups(Path containerGroup, String kind) {
        this.containerGroup = containerGroup;
        this.kind = kind;
    }

    /** The groups of the container whose init has host pid {@code initHostPid}, if they can be used here. */
    static Optional<ExecGroups> of(long initHostPid, String containerId) {
        Optional<Path> v1 = ContainerCgroups.v1(initHostPid, containerId, "pids");
        if (v1.isPresent()) {
            return usable(v1.get(), "cgroup v1 pids");
        }
        return ContainerCgroups.v2(initHostPid, containerId).flatMap(dir -> usable(dir, "cgroup v2"));
    }

    private static Optional<ExecGroups> usable(Path dir, String kind) {
        return Files.isDirectory(dir) && Files.isWritable(dir) && Files.isWritable(dir.resolve("cgroup.procs"))
                ? Optional.of(new ExecGroups(dir, kind))
                : Optional.empty();
    }

    /** For logs: which hierarchy is used. */
    String kind() {
        return kind;
    }

    /** The container's own group. */
    Path containerGroup() {
        return containerGroup;
    }

    /** The host pids directly in the container's group (not in an exec group yet). */
    List<Long> containerProcs() {
        return new Group(containerGroup).procs();
    }

    /** Creates the group of one exec and moves {@code hostPid} into it. */
    Group join(String name, long hostPid) throws IOException {
        Path dir = containerGroup.resolve(name);
        Files.createDirectory(dir);
        Group g = new Group(dir);
        try {
            Files.writeString(
                    dir.resolve("cgroup.procs"),
                    Long.toString(hostPid),
                    StandardCharsets.US_ASCII,
                    StandardOpenOption.WRITE);
        } catch (IOException e) {
            g.removeIfEmpty();
            throw e;
        }
        return g;
    }

    /** One exec's group. */
    static final class Group {
        private final Path dir;

        Group(Path dir) {
            this.dir = dir;
        }

        Path dir() {
            return dir;
        }

        /** The host pids in the group; empty when it is gone. */
        List<Long> procs() {
            String s = Procfs.read(dir.resolve("cgroup.procs"));
            List<Long> pids = new ArrayList<>();
            if (s != null) {
                for (String line : s.split("\n")) {
                    if (!line.isBlank()) {
                        pids.add(Long.parseLong(line.trim()));
                    }
                }
            }
            return pids;
        }

        /** Sends SIGKILL to everything in the group until it is empty; false when something survived the timeout. */
        boolean killAll(long timeoutMillis) {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            while (true) {
                List<Long> pids = procs();
                pids.removeIf(p -> !Procfs.running(p));
                if (pids.isEmpty()) {
                    return true;
                }
                if (System.nanoTime() > deadline) {
                    return false;
                }
                for (long pid : pids) {
                    if (pid > 1) {
                        HostSignals.signal(pid, HostSignals.SIGKILL);
                    }
                }
                LockSupport.parkNanos(500_000);
            }
        }

        /** Removes the group when nothing runs in it any more; quietly does nothing otherwise. */
        void removeIfEmpty() {
            try {
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                // busy: a daemon of the exec still runs; the group goes with the container
            }
        }
    }
}
