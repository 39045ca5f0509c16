package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupEntry;
import ai.chalk.compute.server.runtime.local.mount.BubblewrapMounts;
import ai.chalk.compute.server.runtime.local.mount.MountPlan;
import ai.chalk.compute.server.runtime.local.mount.UnshareMounts;
import ai.chalk.compute.server.runtime.network.SandboxNetwork;
import ai.chalk.compute.server.runtime.seccomp.SyscallFilter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The command lines the local runtime runs; kept in one place so they can be read and reviewed together. The mounts
 * they make are a sandbox's {@link MountPlan}, rendered by {@link BubblewrapMounts} and {@link UnshareMounts}.
 */
final class SandboxCommands {

    /**
     * The line a sandbox's init writes to its stderr once the sandbox is set up: in its user namespace, under its
     * filter, without capabilities (an exec entering it earlier would enter it as it was before).
     */
    static final String READY = "chalk-ready";
    /**
     * What the init does once it has said {@link #READY}: closes its stderr, as it closed its stdin and stdout before
     * saying it. Its stdout is bubblewrap's status file ({@link BubblewrapLauncher#status}), which the server reads the
     * init's exit code from; its stderr the pipe the server reads its lines from until it is ready, then lets go of.
     * The init is the sandbox's own process: kept open, either could be opened by any process in the sandbox through
     * {@code /proc/1/fd}, to rewrite the exit status the server reports, or to write into a pipe no one reads.
     */
    static final String CLOSE_STDERR = "exec 2>&-; ";
    /** The line an {@code unshare} init writes first, with its pid on the host's numbering. */
    static final String INIT_PID = "chalk-init-pid";

    private SandboxCommands() {}

    /**
     * The options of the bubblewrap init (passed on its stdin with {@code --args 0}, so that they, and the host
     * paths of its mounts, do not show in the sandbox's process list; see {@link #bubblewrapInit}). With
     * {@code --as-pid-1} the init command itself is pid 1 (see {@link #INIT_LOOP}); {@code --die-with-parent}
     * ends the sandbox when the server dies.
     *
     * @param joinsUserNamespace whether the init joins a user namespace of the sandbox's own ({@link #initSteps}): it
     *     keeps {@code CAP_SYS_ADMIN} for that alone, since the namespace's owner is the sandbox's host id, not the
     *     init's (root); joining takes every capability it has on the host away, and its next step drops the
     *     namespace's own
     */
    static List<String> bubblewrapArgs(MountPlan mounts, String hostname, String workdir, boolean joinsUserNamespace) {
        // a network namespace of its own even with network: egress goes through slirp4netns (SandboxNetwork)
        List<String> a = new ArrayList<>(
                List.of("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup", "--unshare-net"));
        a.addAll(List.of("--hostname", hostname, "--die-with-parent", "--as-pid-1", "--cap-drop", "ALL"));
        if (joinsUserNamespace) {
            a.addAll(List.of("--cap-add", "CAP_SYS_ADMIN"));
        }
        a.addAll(BubblewrapMounts.render(mounts));
        a.addAll(List.of(
                "--chdir",
                workdir,
                "--clearenv",
                "--setenv",
                "PATH",
                LocalRuntime.DEFAULT_PATH,
                "--json-status-fd",
                "1",
                "--seccomp",
                Integer.toString(FILTER_FD)));
        return a;
    }

    /**
     * How an exec names the helpers it runs inside a sandbox once {@code nsenter} has entered it: by their host
     * paths where the sandbox sees the host's system directories read-only, through the loader under
     * {@value SandboxTools#MOUNT} in an image sandbox (see {@link SandboxTools}). {@code perl} is empty when the
     * host has none (no spare helpers then).
     */
    record Helpers(
            List<String> setsid, List<String> setpriv, List<String> env, List<String> perl, List<String> nsenter) {

        /** Whatever the host has; without isolation only perl is used, and isolation checks for the rest. */
        static Helpers host(HostTools tools) {
            return new Helpers(
                    named(tools, "setsid"),
                    named(tools, "setpriv"),
                    named(tools, "env"),
                    withoutSiteCustomization(named(tools, "perl")),
                    named(tools, "nsenter"));
        }

        /**
         * Perl with {@code -f}: a perl built with {@code usesitecustomize} (Debian's is not) runs
         * {@code sitecustomize.pl} from its site library before its script, and the helpers run in the sandbox's
         * root, where that path is the sandbox's to write, some of them before the syscall filter or as the host's
         * root. Their scripts load no module for the same reason.
         */
        private static List<String> withoutSiteCustomization(List<String> perl) {
            if (perl.isEmpty()) {
                return perl;
            }
            List<String> words = new ArrayList<>(perl);
            words.add("-f");
            return List.copyOf(words);
        }

        private static List<String> named(HostTools tools, String name) {
            return tools.get(name).map(p -> List.of(p.toString())).orElse(List.of());
        }

        static Helpers image(SandboxTools tools) {
            return new Helpers(
                    tools.has("setsid") ? tools.command("setsid") : List.of(),
                    tools.command("setpriv"),
                    tools.command("env"),
                    withoutSiteCustomization(tools.has("perl") ? tools.command("perl") : List.of()),
                    tools.has("nsenter") ? tools.command("nsenter") : List.of());
        }
    }

    /** Where a sandbox with network finds its resolver (slirp4netns' own, see {@link SandboxNetwork#resolvConf}). */
    static final String RESOLV_CONF = "/etc/resolv.conf";

    /**
     * The descriptor bubblewrap reads the init's syscall filter from ({@code --seccomp}; the shell that starts it opens the
     * filter's file on it, see {@link #bubblewrapInitFiles}). Bubblewrap installs it last, after dropping capabilities, so the
     * init runs under it from its first program on.
     */
    static final int FILTER_FD = 3;

    /**
     * The descriptor on which a sandbox's init finds its user namespace ({@code /proc/HOLDER/ns/user}, opened on the
     * host by the shell that starts it, see {@link ai.chalk.compute.server.runtime.userns.UserNamespace}).
     */
    static final int USERNS_FD = 4;

    /**
     * The last steps of a sandbox's init, once its mounts are made: join its user namespace (with none, it stays
     * host root without capabilities), go under the syscall filter, drop every capability, close the namespace's
     * descriptor, say it is ready and run {@code loop}.
     *
     * @param shell the init's shell, as words ({@code /bin/sh}, or the helpers' busybox in an image sandbox)
     */
    static List<String> initSteps(
            Helpers helpers, boolean userns, List<String> filter, List<String> shell, String loop) {
        List<String> c = new ArrayList<>();
        if (userns) {
            c.addAll(helpers.nsenter());
            c.addAll(List.of("--user=/proc/self/fd/" + USERNS_FD, "--"));
        }
        c.addAll(filter);
        c.addAll(helpers.setpriv());
        // joining the user namespace changed the init's ids, which clears bubblewrap's --die-with-parent: set again
        c.addAll(List.of("--pdeathsig", "KILL", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"));
        c.addAll(shell);
        c.addAll(List.of("-c", "exec " + USERNS_FD + "<&- <&- >&-; echo " + READY + " >&2; " + CLOSE_STDERR + loop));
        return c;
    }

    /** The loop of an image sandbox's init: {@link #INIT_LOOP} in the helpers' static busybox. */
    static String imageInitLoop() {
        String bb = SandboxTools.busybox();
        return "while :; do " + bb + " sleep infinity & wait; done";
    }

    /**
     * What pid 1 of a sandbox runs once the sandbox is set up: a shell that reaps every orphan ({@code wait}
     * collects any child) and keeps a {@code sleep} to wait on, starting another should one be killed. A pid 1
     * without signal handlers ignores every signal sent from inside its namespace, so nothing in the sandbox can
     * end it ({@code kill -9 -1} included); only the runtime, from outside, can.
     */
    static final String INIT_LOOP = "while :; do sleep infinity & wait; done";

    /**
     * Runs the rest of its command line (bubblewrap) in a mount namespace of its own, a copy of the host's in which the
     * other sandboxes' layers are detached: the sandbox's own directory is moved aside, the sandboxes directory (a
     * mount of its own, see {@link ai.chalk.compute.server.runtime.host.SandboxesMount}) detached with everything
     * below it in one call, and the own directory moved back to its path. Without this, each running sandbox adds a
     * mount to the table every start copies and bubblewrap reads again for each mount it makes, so that the next
     * start costs more with every sandbox alive. Only what the sandbox sees of the host before its pivot changes (less
     * of it); propagation stays as bubblewrap sets it (slave of the host). Run as host root, before any of the
     * sandbox's code, with the syscall numbers of {@code unshare}, {@code mount} and {@code umount2} as arguments,
     * then the sandboxes directory, the sandbox's directory and the empty directory it is moved aside to. 125: a step
     * failed (it says which); 127: the command could not be run. It loads no module.
     */
    static final String OWN_MOUNT_TABLE = """
            my ($unshare, $mount, $umount2, $all, $dir, $aside) = splice(@ARGV, 0, 6);
            my ($none, $root) = ("none", "/"); # syscall wants buffers it could write to, never literals
            sub fail { print STDERR "chalk: cannot prepare the sandbox's mount table ($_[0]: $!)\n"; exit 125 }
            syscall($unshare + 0, 0x20000) == 0 or fail("unshare");
            syscall($mount + 0, $none, $root, 0, 0x80000 | 0x4000, 0) == 0 or fail("rslave");
            syscall($mount + 0, $dir, $aside, 0, 0x2000, 0) == 0 or fail("move aside");
            # not a mount (a killed server's watcher detached it meanwhile): the start is slower, nothing else
            syscall($umount2 + 0, $all, 2) == 0 or $! + 0 == 22 or fail("detach the other sandboxes");
            syscall($mount + 0, $aside, $dir, 0, 0x2000, 0) == 0 or fail("move back");
            exec { $ARGV[0] } @ARGV;
            print STDERR "chalk: cannot run $ARGV[0]: $!\n";
            exit 127;
            """;

    /**
     * The words that run a command in {@link #OWN_MOUNT_TABLE}.
     *
     * @param numbers   the syscall numbers of this host's architecture
     * @param sandboxes the sandboxes directory, a mount of its own
     * @param dir       the sandbox's directory (its layer's mount point)
     * @param aside     an empty directory outside {@code sandboxes}
     */
    static List<String> ownMountTable(Path perl, SyscallFilter numbers, Path sandboxes, Path dir, Path aside) {
        return List.of(
                perl.toString(),
                "-e",
                OWN_MOUNT_TABLE,
                "--",
                Integer.toString(numbers.syscallNumber("unshare")),
                Integer.toString(numbers.syscallNumber("mount")),
                Integer.toString(numbers.syscallNumber("umount2")),
                sandboxes.toString(),
                dir.toString(),
                aside.toString());
    }

    /**
     * The bubblewrap command line proper: options come on stdin, the init's {@link #initSteps} follow. It expects
     * {@link #bubblewrapInitFiles} open.
     */
    static List<String> bubblewrapInit(Path bwrap, List<String> ownMountTable, List<String> steps) {
        List<String> c = new ArrayList<>(ownMountTable);
        c.addAll(List.of(bwrap.toString(), "--args", "0", "--"));
        c.addAll(steps);
        return c;
    }

    /**
     * What the bubblewrap init finds open: the init's syscall filter on {@link #FILTER_FD} (for {@code --seccomp}),
     * the user namespace's file on {@link #USERNS_FD} when there is one.
     */
    static List<CgroupEntry.OpenFile> bubblewrapInitFiles(Path initFilter, Optional<Path> userns) {
        List<CgroupEntry.OpenFile> open = new ArrayList<>();
        open.add(new CgroupEntry.OpenFile(FILTER_FD, initFilter));
        userns.ifPresent(ns -> open.add(new CgroupEntry.OpenFile(USERNS_FD, ns)));
        return open;
    }

    /**
     * The init script of the {@code unshare} level, run by {@code sh} as pid 1 of the new pid namespace, still
     * with full capabilities and the host's root: it makes the sandbox's mounts in its layer ({@link UnshareMounts}),
     * pivots into it and becomes the capability-less init loop.
     * Arguments: hostname, {@code isolated|host} network, the setpriv command, the prefix of the tools run after the
     * pivot, the init's shell and its loop (see {@link UnshareRoot}), the syscall filter's wrapper as perl's words, its
     * script and its arguments ({@link SyscallFilter.ExecPrefix}), the prefix that joins the sandbox's user namespace
     * (or nothing), then the mount entries. The setpriv command, prefix and shell are split into words: they are the
     * runtime's own paths.
     */
    static final String UNSHARE_INIT = """
            set -eu
            H=$1; NET=$2; SETPRIV=$3; AFTER=$4; SH=$5; LOOP=$6; FPERL=$7; FSCRIPT=$8; FARGS=$9; USERNS=${10}
            shift 10
            read -r hostpid _ < /proc/self/stat
            """ + UnshareMounts.SCRIPT + """
            hostname "$H"
            if [ "$NET" = isolated ] && command -v ip >/dev/null 2>&1; then ip link set lo up; fi
            mkdir -p "$L/.chalk-old-root"
            cd "$L"
            pivot_root . .chalk-old-root
            $AFTER umount -l /.chalk-old-root
            $AFTER rmdir /.chalk-old-root
            $AFTER mkdir -p "$W"
            cd "$W"
            """ + "echo \"" + INIT_PID + " $hostpid\" >&2\n"
            + "exec $USERNS $FPERL -e \"$FSCRIPT\" -- $FARGS $SETPRIV --pdeathsig KILL --bounding-set=-all"
            + " --inh-caps=-all --no-new-privs -- $SH -c \"exec " + USERNS_FD + "<&- <&- >&-; echo " + READY + " >&2; "
            + CLOSE_STDERR + "$LOOP\""
            + " chalk-init\n";

    /**
     * What differs between an {@code unshare} sandbox on the host's system view and one on an image's root: after
     * the pivot, the image's {@code /usr} is the sandbox's to change, so what still runs with capabilities
     * ({@code umount}, {@code mkdir}, setpriv) comes from the helpers at {@value SandboxTools#MOUNT}, and so does
     * the init's shell.
     *
     * @param setpriv the setpriv command, as words
     * @param after   the prefix of the tools run after the pivot (empty: the host's, on the PATH)
     * @param shell   the init's shell, as words
     * @param loop    the init's script (it takes no arguments: pid 1's command line is visible inside the sandbox,
     *                and must not show host pids or paths)
     */
    record UnshareRoot(String setpriv, String after, String shell, String loop) {

        static UnshareRoot host(Path setpriv) {
            return new UnshareRoot(setpriv.toString(), "", "/bin/sh", INIT_LOOP);
        }

        static UnshareRoot image(SandboxTools tools) {
            String bb = SandboxTools.busybox();
            return new UnshareRoot(
                    String.join(" ", tools.command("setpriv")),
                    bb,
                    bb + " sh",
                    "while :; do " + bb + " sleep infinity & wait; done");
        }
    }

    /**
     * The {@code unshare} command that runs {@link #UNSHARE_INIT}: {@code setpriv --pdeathsig KILL} kills
     * {@code unshare} when the server's thread that started it ends, and {@code --kill-child} then kills the
     * sandbox's pid 1, which takes every process of the sandbox with it.
     *
     * @param filter the syscall filter's wrapper, which the init's last step runs under
     */
    static List<String> unshareInit(
            Path unshare,
            Path setpriv,
            UnshareRoot root,
            String hostname,
            MountPlan mounts,
            SyscallFilter.ExecPrefix filter,
            Optional<Path> userns,
            List<String> nsenter) {
        List<String> a = new ArrayList<>(List.of(
                setpriv.toString(),
                "--pdeathsig",
                "KILL",
                "--",
                unshare.toString(),
                "--pid",
                "--fork",
                "--kill-child",
                "--mount",
                "--uts",
                "--ipc",
                "--cgroup",
                "--net"));
        a.addAll(List.of(
                "--propagation",
                "private",
                "--",
                "/bin/sh",
                "-c",
                UNSHARE_INIT,
                "chalk-init",
                hostname,
                "isolated",
                root.setpriv(),
                root.after(),
                root.shell(),
                root.loop(),
                String.join(" ", filter.perl()),
                filter.script(),
                String.join(" ", filter.args()),
                userns.isPresent() ? String.join(" ", nsenter) + " --user=/proc/self/fd/" + USERNS_FD + " --" : ""));
        a.addAll(UnshareMounts.render(mounts));
        return userns.map(ns -> SyscallFilter.withFileOn(USERNS_FD, ns, a)).orElse(a);
    }

    /**
     * {@code nsenter} into every namespace of a sandbox's init, its root and its working directory. nsenter joins a
     * user namespace last when it runs as root (it needs the host's capabilities to join the others, which the host
     * owns), and then becomes root of it, that is the sandbox's first id.
     */
    private static List<String> enter(HostTools tools, long initPid, boolean userns) {
        List<String> c = new ArrayList<>(List.of(
                tools.require("nsenter").toString(),
                "--target",
                Long.toString(initPid),
                "--mount",
                "--uts",
                "--ipc",
                "--net",
                "--pid",
                "--cgroup"));
        if (userns) {
            c.add("--user");
        }
        c.addAll(List.of("--root", "--wd", "--"));
        return c;
    }

    /**
     * The size an exec's stdout pipe is grown to by the helper inside the sandbox (as the sandbox's own user, without
     * capabilities), so that a command writing much output does so in fewer, bigger pieces: an exec's output chunk.
     */
    static final int STDOUT_PIPE = 256 * 1024;

    /** {@code fcntl(F_SETPIPE_SZ)} on stdout, in perl; its failure (no pipe, the host's limits) changes nothing. */
    private static final String GROW_STDOUT = "fcntl(STDOUT, 1031, " + STDOUT_PIPE + ");\n";

    /**
     * What an exec's processes have as {@code oom_score_adj}: when a sandbox's memory runs out, the kernel kills them
     * before the sandbox's init (0). After it killed a command's shell, that shell's {@code head} asked for memory
     * again before the first victim's was freed, and the second victim was the init: the sandbox ended. Raising it
     * needs no privilege; the init, like the server's processes, keeps what it had.
     */
    static final int EXEC_OOM_SCORE_ADJ = 500;

    /** Sets {@link #EXEC_OOM_SCORE_ADJ}, in perl, quietly where {@code /proc} refuses. */
    static final String RAISE_OOM_SCORE = "if (open(my $adj, \">\", \"/proc/self/oom_score_adj\")) { print $adj \""
            + EXEC_OOM_SCORE_ADJ + "\"; close($adj); }\n";

    /**
     * The spare exec helper (see {@link #spare}): reads one request from stdin, exactly as many bytes as it holds
     * (8 hex digits of length, then NUL-separated fields: working directory or empty, the number of environment
     * entries, the entries, the command and its arguments), sets exactly that environment, changes directory and
     * executes the command in its own place, so the command inherits the helper's pid, cgroups, namespaces and
     * pipes. Once up it writes {@link #SPARE_READY} to its stderr. First it grows its stdout pipe to {@value #STDOUT_PIPE} bytes (F_SETPIPE_SZ, 1031; nothing happens when
     * stdout is no pipe or the host's pipe limits say no): the command writes, and the server reads, in bigger pieces.
     * 125: the request or the directory failed; 127: the command could not be executed. It loads no module
     * (warnings are off without {@code -w}): in an image sandbox, perl's module path is the image's.
     */
    static final String SPARE_SCRIPT = """
            $0 = "chalk-exec-spare";
            """ + GROW_STDOUT + RAISE_OOM_SCORE + """
            syswrite(STDERR, "\\0");
            sub rd { my ($n, $buf) = (shift, ""); while (length($buf) < $n) {
                my $r = sysread(STDIN, $buf, $n - length($buf), length($buf)); exit 125 unless $r; } return $buf; }
            my @f = split(/\\0/, rd(hex(rd(8))), -1);
            my ($wd, $n) = (shift(@f), shift(@f));
            %ENV = ();
            for (1 .. $n) { my ($k, $v) = split(/=/, shift(@f), 2); $ENV{$k} = $v; }
            if (length $wd) { chdir($wd) or do { print STDERR "chalk: cannot enter $wd: $!\\n"; exit 125 }; }
            $SIG{INT} = $SIG{HUP} = 'DEFAULT';
            exec { $f[0] } @f;
            print STDERR "chalk: cannot run $f[0]: $!\\n";
            exit 127;
            """;

    /**
     * A spare exec helper, started ahead of time so that an exec does not wait for the namespace entry, the
     * capability drop and the cgroup migration (which waits for an RCU grace period, milliseconds on a busy host):
     * the same chain as {@link #nsenterExec} with {@link #SPARE_SCRIPT} in place of {@code env}, or just the
     * script without isolation ({@code initPid} &lt; 0).
     */
    static List<String> spare(HostTools tools, Helpers helpers, long initPid, boolean userns, List<String> filter) {
        List<String> c = new ArrayList<>();
        if (initPid > 0) {
            c.addAll(enter(tools, initPid, userns));
            c.addAll(filter);
            c.addAll(helpers.setpriv());
            c.addAll(List.of("--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"));
        }
        c.addAll(helpers.perl());
        c.addAll(List.of("-e", SPARE_SCRIPT));
        return c;
    }

    /**
     * The byte a spare helper writes to its stderr once it is up and waits for its request, before anything of the
     * command can write there: the server reads it (and so drops it from the command's stderr), then hands requests
     * to the helper.
     */
    static final int SPARE_READY = 0;

    /** The request a spare helper reads; see {@link #SPARE_SCRIPT}. */
    static byte[] spareRequest(String workdir, Map<String, String> env, String command, List<String> args) {
        StringBuilder p = new StringBuilder(workdir).append('\0').append(env.size());
        env.forEach((k, v) -> p.append('\0').append(k).append('=').append(v));
        p.append('\0').append(command);
        args.forEach(a -> p.append('\0').append(a));
        byte[] payload = p.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] request = new byte[8 + payload.length];
        System.arraycopy(
                String.format("%08x", payload.length).getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                0,
                request,
                0,
                8);
        System.arraycopy(payload, 0, request, 8, payload.length);
        return request;
    }

    /**
     * One exec inside an isolated sandbox: {@code nsenter} into the init's namespaces and root (and, with no
     * {@code --wd} argument, the init's working directory, which is the sandbox's workdir; a path argument would
     * be opened on the host), on a PTY {@code setsid --ctty} so the command leads its own session and owns the
     * terminal, {@code setpriv} to drop every capability, and {@link #EXEC_SCRIPT} (or, without perl, {@code env -i})
     * for a clean environment and another working directory. The environment is applied only after the capabilities
     * are gone, so nothing a user sets (LD_PRELOAD ...) reaches a privileged process, and it travels in the host
     * process's environment ({@link #hostEnvironment}), not on its command line.
     */
    static List<String> nsenterExec(
            HostTools tools,
            Helpers helpers,
            List<String> filter,
            long initPid,
            boolean userns,
            boolean pty,
            String workdir,
            Map<String, String> env,
            String command,
            List<String> args) {
        List<String> c;
        Optional<String> relay = pty && PtyRelay.appliesTo(helpers) ? PtyRelay.script() : Optional.empty();
        if (relay.isPresent()) {
            // the command leads a session on a terminal made inside the sandbox (PtyRelay); the host's terminal stays
            // the controlling terminal of the session pty4j made, whose window-size signals reach the relay
            c = enter(tools, initPid, userns);
            c.addAll(filter);
            c.addAll(helpers.setpriv());
            c.addAll(List.of("--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"));
            c.addAll(helpers.perl());
            c.addAll(List.of("-e", relay.get(), "--", workdir == null ? "" : workdir, command));
            c.addAll(args);
            return c;
        }
        if (pty && userns) {
            // taking the terminal from the session pty4j made for nsenter needs CAP_SYS_ADMIN over the host, which no
            // one has in the sandbox's user namespace: take it first, then join the namespace (its init's, pid 1)
            c = enter(tools, initPid, false);
            c.addAll(helpers.setsid());
            c.add("--ctty");
            c.addAll(helpers.nsenter());
            c.addAll(List.of("--user=/proc/1/ns/user", "--"));
            c.addAll(filter);
        } else {
            c = enter(tools, initPid, userns);
            // the filter before anything drops capabilities: a process of the sandbox that is neither filtered nor
            // more privileged than the sandbox's own could be traced by them and made to skip it (see ExecWrapper)
            c.addAll(filter);
            if (pty) {
                c.addAll(helpers.setsid());
                c.add("--ctty");
            }
        }
        c.addAll(helpers.setpriv());
        c.addAll(List.of("--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"));
        if (!helpers.perl().isEmpty()) {
            // the variables travel in the host process's environment (see hostEnvironment), which only its user can
            // read, never on a command line, which every user of the host can (/proc/<pid>/cmdline)
            c.addAll(helpers.perl());
            c.addAll(List.of("-e", EXEC_SCRIPT, "--", workdir == null ? "" : workdir, command));
            c.addAll(args);
            return c;
        }
        c.addAll(helpers.env());
        c.add("-i");
        // a server started in the background or under nohup ignores these, and so would the command: a shell could
        // not even trap them (POSIX shells keep signals ignored on entry ignored)
        c.add("--default-signal=HUP,INT");
        if (workdir != null) {
            c.addAll(List.of("-C", workdir));
        }
        c.add("--");
        env.forEach((k, v) -> c.add(k + "=" + v));
        c.add(command);
        c.addAll(args);
        return c;
    }

    /** The prefix of a sandbox variable's name, hex-encoded, in the environment of the host side of an exec. */
    static final String ENCODED_VARIABLE = "CHALK_ENV_";

    /** {@link #EXEC_SCRIPT}'s first part: the sandbox's variables decoded, the working directory entered. */
    static final String EXEC_ENTER = """
            my %e;
            for my $k (keys %ENV) { $e{pack("H*", $1)} = $ENV{$k} if $k =~ /^CHALK_ENV_([0-9a-f]+)$/; }
            %ENV = %e;
            my $wd = shift(@ARGV);
            if (length $wd) { chdir($wd) or do { print STDERR "chalk: cannot enter $wd: $!\n"; exit 125 }; }
            $SIG{INT} = $SIG{HUP} = 'DEFAULT';
            """;

    /** {@link #EXEC_SCRIPT}'s last part: the command executed in this process's place. */
    static final String EXEC_RUN = """
            exec { $ARGV[0] } @ARGV;
            print STDERR "chalk: cannot run $ARGV[0]: $!\n";
            exit 127;
            """;

    /** Set in {@link #hostEnvironment} when the server gives the exec's pipes to the sandbox's root. */
    static final String PIPES_GIVEN = "CHALK_PIPES_GIVEN";

    /**
     * Part of {@link #EXEC_SCRIPT}: when the server gives the exec's pipes to the sandbox's root ({@value #PIPES_GIVEN};
     * see {@link ai.chalk.compute.server.runtime.userns.SandboxPipes}), which it does as the exec starts, waits until
     * none of its standard streams is a pipe of another owner, 200 ms at most (the server's change comes while nsenter
     * and setpriv work, milliseconds before this): the command then finds them its own from its first instruction on;
     * past that it runs all the same, and opening them by name is refused as before.
     */
    static final String AWAIT_PIPES = """
            if ($ENV{CHALK_PIPES_GIVEN}) {
                for (1 .. 400) {
                    last unless grep { -p $_ && (stat(_))[4] != $< } (\\*STDIN, \\*STDOUT, \\*STDERR);
                    select(undef, undef, undef, 0.0005);
                }
            }
            """;

    /**
     * The last step of {@link #nsenterExec}, after the capabilities are gone: takes the sandbox's variables out of
     * their encoded names (so that none of them, PERL5OPT or LD_PRELOAD say, meant anything to the host tools or to
     * perl on the way), enters the working directory, and executes the command; its stdout pipe grows as in
     * {@link #SPARE_SCRIPT}, which it is module-free like.
     */
    static final String EXEC_SCRIPT = """
            $0 = "chalk-exec";
            """ + GROW_STDOUT + RAISE_OOM_SCORE + AWAIT_PIPES + EXEC_ENTER + EXEC_RUN;

    /**
     * The environment of the host side of {@link #nsenterExec}: {@link #HOST_ENV} and, with perl, the sandbox's
     * variables under encoded names for {@link #EXEC_SCRIPT}, and {@link #PIPES_GIVEN} when {@code pipesGiven}.
     */
    static Map<String, String> hostEnvironment(Helpers helpers, Map<String, String> env, boolean pipesGiven) {
        if (helpers.perl().isEmpty()) {
            return HOST_ENV;
        }
        Map<String, String> out = new java.util.LinkedHashMap<>(HOST_ENV);
        if (pipesGiven) {
            out.put(PIPES_GIVEN, "1");
        }
        env.forEach((k, v) -> out.put(
                ENCODED_VARIABLE
                        + java.util.HexFormat.of().formatHex(k.getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                v));
        return out;
    }

    /**
     * The environment of what the runtime runs to start or enter a sandbox. Those helpers hold capabilities inside the
     * sandbox's root, so nothing may make them read its files: the C locale loads no locale or gconv file, and no
     * {@code PERL5OPT} or {@code LD_*} variable reaches them.
     */
    static final Map<String, String> HOST_ENV = Map.of("PATH", LocalRuntime.DEFAULT_PATH, "LC_ALL", "C");

    /** A host process for {@code command}, started from {@code /} in {@link #HOST_ENV}. */
    static ProcessBuilder hostProcess(List<String> command, ProcessBuilder.Redirect stdout) {
        ProcessBuilder pb =
                new ProcessBuilder(command).directory(new java.io.File("/")).redirectOutput(stdout);
        pb.environment().clear();
        pb.environment().putAll(HOST_ENV);
        return pb;
    }
}
