package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * The processes of one local sandbox, as the host sees them: those the runtime started for its execs, and every
 * process of the sandbox found by its pid namespace (isolated), its cgroups, or as descendants of the execs (plain
 * processes); and the SIGTERM a terminate sends them.
 */
final class SandboxProcesses {

    private final long initPid;
    private final String pidNamespace;
    private final SandboxCgroup groups;
    private final Set<LocalProcess> started = ConcurrentHashMap.newKeySet();

    /**
     * @param initPid      the init's host pid; -1 without isolation
     * @param pidNamespace the init's pid namespace; null without isolation
     * @param groups       the sandbox's cgroups; null when cgroups are not in use
     */
    SandboxProcesses(long initPid, String pidNamespace, SandboxCgroup groups) {
        this.initPid = initPid;
        this.pidNamespace = pidNamespace;
        this.groups = groups;
    }

    /** Keeps {@code process} until it ends. */
    void add(LocalProcess process) {
        started.add(process);
        process.onExit().whenComplete((s, e) -> started.remove(process));
    }

    /** The processes the runtime started that have not ended. */
    Set<LocalProcess> started() {
        return started;
    }

    /** The sandbox's processes other than its pid 1, as host pids. */
    List<Long> hostPids() {
        List<Long> pids = new ArrayList<>();
        if (pidNamespace != null) {
            // every process of the sandbox is in its cgroups, where it has them: it joins them before it enters the
            // sandbox (the init and each exec), its children are born there, and nothing in it can move out (the
            // host's cgroup files are not its to write). Then its groups are where to look, not every process of
            // the host (thousands with many sandboxes: each terminate read them all)
            List<Long> inNamespace = groups != null
                    ? Procfs.processesInNamespace(pidNamespace, groups.allProcs())
                    : Procfs.processesInNamespace(pidNamespace);
            for (long pid : inNamespace) {
                if (pid != initPid) {
                    pids.add(pid);
                }
            }
            // a command still passing through its exec chain (nsenter, setpriv, env) may not show in the scan of
            // /proc for a moment; the ones this runtime started are known by pid
            for (LocalProcess p : started) {
                long pid = p.knownHostPid();
                if (pid > 0 && !pids.contains(pid) && Procfs.running(pid)) {
                    pids.add(pid);
                }
            }
        } else if (groups != null) {
            pids.addAll(groups.allProcs());
            pids.remove(Procfs.SELF);
        } else {
            for (LocalProcess p : started) {
                ProcessHandle.of(p.hostProcess().pid()).ifPresent(h -> {
                    pids.add(h.pid());
                    h.descendants().forEach(d -> pids.add(d.pid()));
                });
            }
        }
        return pids;
    }

    /**
     * Sends SIGTERM to every process of the sandbox and waits for them to end, until the deadline; returns as soon as
     * none is left, so a sandbox with nothing running stops at once.
     *
     * <p>Like {@code kill -TERM -1}, the SIGTERM goes to the processes there are: a process that handles it may start
     * others to clean up (a trap that runs {@code rm}, say), which must be left to do their work within the grace
     * period, so a process started later by one that was signalled (or by one of those) is waited for, not signalled.
     * The processes are scanned again while waiting, though: one that was still passing through its exec chain, or
     * started just before the terminate, shows up late and must get its SIGTERM too rather than a SIGKILL at the end
     * of the grace period. The init's keep-alive is neither signalled nor waited for (see {@link #keepAlive}).
     */
    void sigtermUntilGone(long deadlineNanos) {
        String initCommand = initPid > 0 ? Procfs.commandLine(initPid) : "";
        Set<Long> signalled = new HashSet<>();
        Set<Long> spared = new HashSet<>();
        boolean marked = false;
        long pause = 200_000;
        while (true) {
            List<Long> running = hostPids().stream()
                    .filter(pid -> !keepAlive(pid, initCommand))
                    .toList();
            if (running.isEmpty()
                    && started.stream().noneMatch(p -> p.hostProcess().isAlive())) {
                return;
            }
            // a command that ended on its SIGTERM leaves its nsenter on the host passing the status on: the kill
            // that follows the grace period would reach nsenter first and turn a SIGTERM into a SIGKILL
            if (!running.isEmpty() && !marked) {
                started.forEach(p -> p.deliveredBySandbox(HostSignals.SIGTERM));
                marked = true;
            }
            // decided against the earlier passes: a child found in the same pass as its parent was there already
            Set<Long> seen = new HashSet<>(signalled);
            seen.addAll(spared);
            for (long pid : running) {
                if (seen.contains(pid)) {
                    continue;
                }
                long parent = Procfs.parentPid(pid);
                if (parent != initPid && seen.contains(parent)) {
                    spared.add(pid); // started by a process after its SIGTERM: cleaning up, most likely
                } else {
                    signalled.add(pid);
                    HostSignals.signal(pid, HostSignals.SIGTERM);
                }
            }
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return;
            }
            LockSupport.parkNanos(Math.min(pause, left));
            pause = Math.min(pause * 2, 10_000_000);
        }
    }

    /**
     * Whether {@code pid} is the init's keep-alive (see {@link SandboxCommands#INIT_LOOP}): its {@code sleep}, or the
     * init's fork that is about to become one (it still has the init's command line). Neither may be signalled: the
     * init starts another at once, and a SIGTERM for each would keep the sandbox forking for the whole grace period
     * with a fresh one to wait for every time.
     */
    private boolean keepAlive(long pid, String initCommand) {
        if (initPid <= 0 || Procfs.parentPid(pid) != initPid) {
            return false;
        }
        String command = Procfs.commandLine(pid);
        return command.endsWith("sleep infinity") || command.equals(initCommand);
    }
}
