package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.local.LocalRuntime.Level;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupDriver;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupV1;
import java.util.List;
import java.util.Optional;

/**
 * Which isolation works on this host, tried once when a local runtime starts (a trial sandbox with bubblewrap, else a
 * trial namespace with util-linux {@code unshare}), and the words the runtime reports it in.
 */
final class IsolationProbe {

    /** How many times a tool's trial runs before the tool counts as not working. */
    static final int TRIALS = 3;

    private static final long TRIAL_PAUSE_MILLIS = 200;

    private IsolationProbe() {}

    /**
     * The best level that works here, as {@code mode} allows; what failed on the way is added to {@code failures}.
     *
     * @throws IllegalStateException when isolation is required and no tool works
     */
    static Level choose(HostTools tools, LocalIsolation mode, List<String> failures) {
        if (mode == LocalIsolation.NONE) {
            failures.add("isolation is set to none");
            return Level.NONE;
        }
        List<String> helpersMissing = tools.missing("nsenter", "setpriv", "setsid", "env");
        String bwrap = probeBubblewrap(tools, helpersMissing);
        if (bwrap == null) {
            return Level.BUBBLEWRAP;
        }
        failures.add("bubblewrap: " + bwrap);
        String unshare = probeUnshare(tools, helpersMissing);
        if (unshare == null) {
            return Level.UNSHARE;
        }
        failures.add("unshare: " + unshare);
        if (mode == LocalIsolation.REQUIRED) {
            throw new IllegalStateException("isolation is required, but no isolation tool works on this host ("
                    + String.join("; ", failures) + "). Install bubblewrap (e.g. apt-get install bubblewrap) or "
                    + "util-linux (unshare, nsenter, setpriv, setsid), make sure the server may create namespaces "
                    + "(it must run as root), or choose isolation auto or none to run without it");
        }
        return Level.NONE;
    }

    private static String probeBubblewrap(HostTools tools, List<String> helpersMissing) {
        return trial(
                tools,
                "bwrap",
                helpersMissing,
                List.of(
                        "--unshare-pid",
                        "--unshare-net",
                        "--unshare-ipc",
                        "--unshare-uts",
                        "--die-with-parent",
                        "--cap-drop",
                        "ALL",
                        "--ro-bind",
                        "/",
                        "/",
                        "--proc",
                        "/proc",
                        "--dev",
                        "/dev",
                        "--",
                        "/bin/true"),
                "a trial sandbox");
    }

    private static String probeUnshare(HostTools tools, List<String> helpersMissing) {
        return trial(
                tools,
                "unshare",
                helpersMissing,
                List.of(
                        "--pid",
                        "--fork",
                        "--kill-child",
                        "--mount",
                        "--uts",
                        "--ipc",
                        "--net",
                        "--propagation",
                        "private",
                        "--",
                        "/bin/true"),
                "a trial namespace");
    }

    /** Runs {@code tool} with {@code args} as a trial; null when it worked, else why not. */
    private static String trial(
            HostTools tools, String tool, List<String> helpersMissing, List<String> args, String what) {
        if (tools.get(tool).isEmpty()) {
            return tool + " is not on the PATH";
        }
        if (!helpersMissing.isEmpty()) {
            return "util-linux " + String.join(", ", helpersMissing) + " not found under /usr";
        }
        List<String> command =
                new java.util.ArrayList<>(List.of(tools.require(tool).toString()));
        command.addAll(args);
        // a trial that fails once may have met a passing shortage (pids, memory, a slow host): the level chosen here
        // holds for the server's life, so a weaker one is chosen only after the trial failed TRIALS times (a trial
        // that timed out is not run again: it took ten seconds already)
        HostTools.Probe p = HostTools.run(command);
        for (int i = 1; i < TRIALS && !p.ok() && !p.output().equals("timed out"); i++) {
            interruptedIf(Thread.currentThread().isInterrupted());
            try {
                Thread.sleep(TRIAL_PAUSE_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                interruptedIf(true);
            }
            p = HostTools.run(command);
        }
        interruptedIf(Thread.currentThread().isInterrupted());
        return p.ok() ? null : what + " failed: " + p.output();
    }

    /**
     * An interrupted probe says nothing of the tools: it must not leave the server on a weaker level for its life.
     *
     * @throws IllegalStateException when {@code interrupted}
     */
    private static void interruptedIf(boolean interrupted) {
        if (interrupted) {
            throw new IllegalStateException("interrupted while finding which isolation tools work on this host");
        }
    }

    /** The isolation in force, as the runtime reports it in its log, health and the isolation tests. */
    static Isolation describe(
            Level level,
            List<String> failures,
            HostTools tools,
            SandboxFiles.SystemView systemView,
            CgroupDriver cgroups,
            Optional<String> userNamespaceProblem) {
        String view = String.join(", ", systemView.readOnlyDirs());
        String cg = describeCgroups(cgroups);
        String who = userNamespaceProblem
                .map(why ->
                        "processes run as the host's root without capabilities (no user" + " namespace: " + why + ")")
                .orElse("processes run as root of a user namespace of their own (an"
                        + " unprivileged id range of the host's, through id-mapped mounts) without capabilities");
        return switch (level) {
            case BUBBLEWRAP ->
                new Isolation(
                        level.label,
                        bubblewrapVersion(tools) + " with util-linux nsenter and setpriv: "
                                + "each sandbox has its own pid, mount, network (loopback only), ipc and uts namespaces and a "
                                + "private writable root with the host's " + view
                                + " read-only (no /home, /root, host /tmp or "
                                + "server data); " + who
                                + ", with no_new_privs and a syscall filter modelled on Docker's "
                                + "default profile; " + cg,
                        true);
            case UNSHARE ->
                new Isolation(
                        level.label,
                        "util-linux unshare, nsenter and setpriv (bubblewrap unusable: "
                                + failures.get(0).substring("bubblewrap: ".length())
                                + "): each sandbox has its own pid, mount, "
                                + "network (loopback only), ipc and uts namespaces and a private writable root with the host's "
                                + view + " read-only; " + who
                                + ", with no_new_privs and a syscall filter modelled on Docker's "
                                + "default profile; " + cg,
                        true);
            case NONE ->
                new Isolation(
                        level.label,
                        "NO ISOLATION: sandboxes are plain host processes that see and can "
                                + "change the whole host, its processes and its network (" + String.join("; ", failures)
                                + "); "
                                + cg,
                        false);
        };
    }

    private static String describeCgroups(CgroupDriver cgroups) {
        List<String> in = cgroups.controllers();
        String freezer = cgroups.freezer()
                ? "; the freezer suspends sandboxes and freezes them for snapshots"
                : "; no freezer (" + cgroups.freezerProblem().orElse("unavailable") + "): sandboxes cannot be"
                        + " suspended and snapshots are copied while their processes run";
        if (in.isEmpty() && cgroups.tracksExecs()) { // cgroup v2 without its controllers: groups, but no limits
            return "no cgroup limits (" + cgroups.problem().orElse("unavailable") + "): cpu, memory and process limits"
                    + " are NOT enforced; a " + cgroups.version() + " group per exec lets killTree reach re-parented"
                    + " daemons" + freezer;
        }
        if (in.isEmpty()) {
            return "no cgroups (" + cgroups.problem().orElse("unavailable") + "): cpu, memory and process limits "
                    + "are NOT enforced, and killTree follows the process tree, so daemons that re-parent may escape it"
                    + (cgroups.freezer()
                            ? "; the freezer suspends sandboxes and freezes them for snapshots"
                            : "; sandboxes cannot be suspended and snapshots are copied while their processes run");
        }
        StringBuilder s = new StringBuilder(cgroups.version())
                .append(" controllers ")
                .append(String.join(", ", in))
                .append(" in use");
        if (cgroups.tracksExecs()) {
            s.append(" (a ")
                    .append(cgroups instanceof CgroupV1 ? "pids group" : "group")
                    .append(" per exec lets killTree reach re-parented daemons)");
        } else {
            s.append("; without pids, killTree follows the process tree, so daemons that re-parent may escape it");
        }
        cgroups.problem().ifPresent(p -> s.append("; not enforced: ").append(p));
        return s.append(freezer).toString();
    }

    private static String bubblewrapVersion(HostTools tools) {
        HostTools.Probe v = HostTools.run(List.of(tools.require("bwrap").toString(), "--version"));
        return v.ok() && !v.output().isBlank() ? v.output().lines().findFirst().orElse("bubblewrap") : "bubblewrap";
    }
}
