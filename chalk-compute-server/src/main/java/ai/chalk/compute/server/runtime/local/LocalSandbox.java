package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.EntrypointOutput;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessSpecCheck;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxLifecycle;
import ai.chalk.compute.server.runtime.SandboxOperationException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.BeneathRoot;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.InRootLookup;
import ai.chalk.compute.server.runtime.host.LayerQuota;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.OutputPipes;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.host.RawTerminal;
import ai.chalk.compute.server.runtime.local.LocalRuntime.Level;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupEntry;
import ai.chalk.compute.server.runtime.local.cgroup.ExecCgroup;
import ai.chalk.compute.server.runtime.local.cgroup.ProcessGroup;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.userns.IdRange;
import ai.chalk.compute.server.runtime.userns.SandboxPipes;
import com.pty4j.PtyProcessBuilder;
import com.pty4j.unix.UnixPtyProcess;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One sandbox of the {@link LocalRuntime}: a long-lived init holding the sandbox's namespaces (none without
 * isolation), its cgroups and its writable layer {@code <state>/sandboxes/<id>/root}.
 *
 * <p>Suspend and resume freeze and thaw the sandbox's freezer group (every process of the sandbox is in it). A
 * snapshot freezes the sandbox too while its layer is copied, and holds the read lock meanwhile, so a terminate
 * waits for the copy to end rather than deleting the layer under it.
 */
final class LocalSandbox implements RuntimeSandbox {

    private static final Logger log = LoggerFactory.getLogger(LocalSandbox.class);
    private static final Pattern EXIT_CODE = Pattern.compile("\"exit-code\"\\s*:\\s*(-?\\d+)");
    /** How long the processes of a sandbox get to reach the frozen state. */
    private static final long FREEZE_TIMEOUT_MILLIS = 10_000;

    private final LocalRuntime runtime;
    private final String id;
    private final Level level;
    private final Path dir;
    private final String workdir;
    private final Path hostWorkdir;
    private final Map<String, String> env;
    /** Whether the root is an image's (an overlay at {@code root} over layers, changes in {@code upper}). */
    private final boolean fromImage;

    private final SandboxCommands.Helpers helpers;
    /** The words that put a process entering the sandbox under its syscall filter; empty without isolation. */
    private final List<String> filter;

    private final SandboxCgroup groups;
    private final Process init;
    /** The sandbox's way out when it has network (slirp4netns, or its link to the egress proxy), closed at release. */
    private final SandboxInit.WayOut egress;

    private final long initPid;
    /** The init's pid namespace: what says its pid still names it, not a process that got the pid after it. */
    private final String initPidNamespace;
    /** The host ids the sandbox's processes run as (its user namespace's mapping); empty: host root, no caps. */
    private final Optional<IdRange> ids;

    private final SandboxProcesses processes;
    private final SandboxLifecycle lifecycle;
    private final SpareExecs spares;

    private LocalSandbox(
            LocalRuntime runtime,
            String id,
            Path dir,
            String workdir,
            Path hostWorkdir,
            Map<String, String> env,
            boolean fromImage,
            SandboxCgroup groups,
            SandboxInit init) {
        this.runtime = runtime;
        this.id = id;
        this.level = runtime.level();
        this.dir = dir;
        this.workdir = workdir;
        this.hostWorkdir = hostWorkdir;
        this.env = env;
        this.fromImage = fromImage;
        this.helpers = fromImage
                ? SandboxCommands.Helpers.image(runtime.sandboxTools())
                : SandboxCommands.Helpers.host(runtime.tools());
        this.init = init.process();
        this.egress = init.egress();
        this.initPid = init.pid();
        this.initPidNamespace = init.pidNamespace();
        this.ids = init.ids();
        this.filter = level.isolated() ? init.filter().filter().execPrefix(helpers.perl()) : List.of();
        this.groups = groups;
        this.processes = new SandboxProcesses(initPid, init.pidNamespace(), groups);
        this.lifecycle = new SandboxLifecycle(id, new Engine(), false);
        // never queue behind a terminate waiting to begin (an exec may be waiting for this spare)
        this.spares = new SpareExecs(
                id,
                !helpers.perl().isEmpty() && (level.isolated() || groups != null),
                () -> lifecycle.ifRunningNow(this::spawnSpare),
                lifecycle::running,
                runtime.helpers(),
                runtime.spareExecsIdle());
    }

    /** Starts the sandbox {@code spec} describes (see {@link SandboxStart}) and its entrypoint, if it has one. */
    static LocalSandbox start(LocalRuntime runtime, SandboxSpec spec) throws RuntimeStartException {
        SandboxStart.Started s = SandboxStart.start(runtime, spec);
        LocalSandbox sandbox = new LocalSandbox(
                runtime,
                spec.id(),
                s.dir(),
                s.workdir(),
                s.hostWorkdir(),
                s.env(),
                s.fromImage(),
                s.groups(),
                s.init());
        sandbox.launch(s.entrypoint());
        log.debug("Sandbox {} started ({}, init pid {})", spec.id(), sandbox.level.label, sandbox.initPid);
        return sandbox;
    }

    /**
     * Makes a sandbox started ahead of time (see {@link SandboxPool}) the sandbox {@code spec} describes: the id,
     * environment and entrypoint are the spec's ({@code resolved} from it), the spare exec helpers those started while
     * it waited. Its host name is the spec's already; nothing has run in it but its init and those helpers.
     */
    static LocalSandbox handOver(
            LocalRuntime runtime,
            SandboxSpec spec,
            SandboxStart.Resolved resolved,
            SandboxStart.Started s,
            List<CompletableFuture<SpareExecs.Spare>> readySpares)
            throws RuntimeStartException {
        LocalSandbox sandbox = new LocalSandbox(
                runtime,
                spec.id(),
                s.dir(),
                s.workdir(),
                s.hostWorkdir(),
                resolved.env(),
                s.fromImage(),
                s.groups(),
                s.init());
        readySpares.forEach(sandbox.spares::seed);
        sandbox.launch(resolved.entrypoint());
        log.debug(
                "Sandbox {} handed over from the pool ({}, init pid {})",
                spec.id(),
                sandbox.level.label,
                sandbox.initPid);
        return sandbox;
    }

    /** Ends a sandbox started ahead of time that is never handed over, with its spare helpers. */
    static void discard(
            LocalRuntime runtime,
            String name,
            SandboxStart.Started s,
            List<CompletableFuture<SpareExecs.Spare>> spares) {
        LocalSandbox sandbox = new LocalSandbox(
                runtime, name, s.dir(), s.workdir(), s.hostWorkdir(), s.env(), s.fromImage(), s.groups(), s.init());
        spares.forEach(sandbox.spares::seed);
        sandbox.terminate(Duration.ZERO);
    }

    /** Follows the init, then starts the entrypoint if there is one. */
    private void launch(List<String> entrypoint) throws RuntimeStartException {
        if (init != null) {
            init.onExit().thenAcceptAsync(p -> initExited(), runtime.helpers());
        }
        if (!entrypoint.isEmpty()) {
            startEntrypoint(entrypoint);
        }
    }

    private void startEntrypoint(List<String> entrypoint) throws RuntimeStartException {
        RuntimeProcess p;
        try {
            p = exec(new ProcessSpec(
                    entrypoint.get(0),
                    entrypoint.subList(1, entrypoint.size()),
                    Optional.empty(),
                    Map.of(),
                    Optional.empty()));
        } catch (ProcessStartException e) {
            terminate(Duration.ZERO);
            throw new RuntimeStartException("the entrypoint could not be started: " + e.getMessage(), e);
        }
        EntrypointOutput.follow(p, id, runtime.helpers(), log);
    }

    @Override
    public String id() {
        return id;
    }

    /**
     * Starts a process. The command is looked up on the PATH of the process's environment inside the sandbox
     * before anything is spawned, so a missing command or working directory is a {@link ProcessStartException}
     * rather than an exit code; should it vanish between the check and the exec, the process exits with 127 (not
     * found) or 125 (no such working directory) as usual.
     */
    @Override
    public RuntimeProcess exec(ProcessSpec spec) throws ProcessStartException {
        ProcessSpecCheck.commandLine(spec);
        Map<String, String> processEnv = new LinkedHashMap<>(env);
        processEnv.putAll(ProcessSpecCheck.env(spec.env()));
        if (spec.pty().isPresent()) {
            processEnv.putIfAbsent("TERM", "xterm-256color");
        }
        return lifecycle.exec(() -> {
            RuntimeProcess p = level.isolated() ? execIsolated(spec, processEnv) : execPlain(spec, processEnv);
            spares.afterExec(p);
            return p;
        });
    }

    private RuntimeProcess execIsolated(ProcessSpec spec, Map<String, String> processEnv) throws ProcessStartException {
        // nsenter enters whatever process has the pid now, as host root: never one that got it after the init
        if (!stillTheInit(initPid, initPidNamespace)) {
            throw new ProcessStartException("sandbox " + id + " is not running");
        }
        Path root = Path.of("/proc", Long.toString(initPid), "root");
        String wd = spec.workdir()
                .filter(w -> !w.isBlank())
                .map(LocalSandbox::normalize)
                .orElse(workdir);
        String absoluteWd = wd.startsWith("/") ? wd : normalize(workdir + "/" + wd);
        if (InRootLookup.find(root, absoluteWd)
                .filter(f -> f.type() == BeneathRoot.Type.DIRECTORY)
                .isEmpty()) {
            if (!Procfs.running(initPid)) {
                throw new ProcessStartException("sandbox " + id + " is not running");
            }
            throw new ProcessStartException("working directory does not exist in sandbox: " + wd);
        }
        String command = CommandLookup.resolve(root, absoluteWd, spec.command(), processEnv.get("PATH"));
        RuntimeProcess spare = viaSpare(spec, absoluteWd, processEnv, command);
        if (spare != null) {
            return spare;
        }
        List<String> cmd = SandboxCommands.nsenterExec(
                runtime.tools(),
                helpers,
                filter,
                initPid,
                ids.isPresent(),
                spec.pty().isPresent(),
                absoluteWd.equals(workdir) ? null : absoluteWd,
                processEnv,
                command,
                spec.args());
        return spawn(
                spec,
                cmd,
                SandboxCommands.hostEnvironment(
                        helpers, processEnv, ids.isPresent() && spec.pty().isEmpty() && SandboxPipes.works()),
                Path.of("/"),
                true);
    }

    private RuntimeProcess execPlain(ProcessSpec spec, Map<String, String> processEnv) throws ProcessStartException {
        Path wd = spec.workdir()
                .filter(w -> !w.isBlank())
                .map(hostWorkdir::resolve)
                .orElse(hostWorkdir);
        if (!Files.isDirectory(wd)) {
            throw new ProcessStartException("working directory does not exist: " + wd);
        }
        String command = CommandLookup.resolve(Path.of("/"), wd.toString(), spec.command(), processEnv.get("PATH"));
        RuntimeProcess spare = viaSpare(spec, wd.toString(), processEnv, command);
        if (spare != null) {
            return spare;
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(command);
        cmd.addAll(spec.args());
        return spawn(spec, cmd, processEnv, wd, false);
    }

    /** Hands the request to a spare helper that is ready, if there is one; null to take the direct path. */
    private RuntimeProcess viaSpare(ProcessSpec spec, String workdir, Map<String, String> env, String command) {
        if (spec.pty().isPresent()) {
            return null;
        }
        SpareExecs.Spare s = spares.take(SandboxCommands.spareRequest(workdir, env, command, spec.args()));
        if (s == null) {
            return null;
        }
        LocalProcess process = new LocalProcess(
                s.process(),
                s.output(),
                false,
                s.group() == null ? null : s.group().group(),
                s.pids(),
                "'" + spec.command() + "' in sandbox " + id,
                true,
                runtime.helpers());
        processes.add(process);
        return process;
    }

    /**
     * Whether {@code pid} is still the sandbox's init: a process in the init's pid namespace. The init may have ended
     * and its pid gone to another process, which {@code nsenter} or a signal would reach instead.
     */
    static boolean stillTheInit(long pid, @Nullable String pidNamespace) {
        return pidNamespace != null
                && Procfs.pidNamespace(pid).filter(pidNamespace::equals).isPresent();
    }

    private SpareExecs.Spare spawnSpare() {
        return spawnSpare(runtime, id, helpers, filter, groups, initPid, initPidNamespace, ids);
    }

    /**
     * Starts a spare exec helper in the isolated sandbox of {@code started} before it has become a sandbox (see
     * {@link SandboxPool}); null when it cannot be started.
     */
    static SpareExecs.@Nullable Spare spawnSpare(LocalRuntime runtime, String name, SandboxStart.Started started) {
        SandboxCommands.Helpers helpers = started.fromImage()
                ? SandboxCommands.Helpers.image(runtime.sandboxTools())
                : SandboxCommands.Helpers.host(runtime.tools());
        if (helpers.perl().isEmpty()) {
            return null;
        }
        SandboxInit init = started.init();
        List<String> filter = init.filter().filter().execPrefix(helpers.perl());
        return spawnSpare(
                runtime, name, helpers, filter, started.groups(), init.pid(), init.pidNamespace(), init.ids());
    }

    private static SpareExecs.@Nullable Spare spawnSpare(
            LocalRuntime runtime,
            String id,
            SandboxCommands.Helpers helpers,
            List<String> filter,
            @Nullable SandboxCgroup groups,
            long initPid,
            @Nullable String initPidNamespace,
            Optional<IdRange> ids) {
        boolean isolated = runtime.level().isolated();
        if (isolated && !stillTheInit(initPid, initPidNamespace)) {
            return null; // a spare enters the init's pid as host root: never a process that got it since
        }
        ExecCgroup group = null;
        try {
            group = groups == null ? null : groups.newExec();
            List<String> command = CgroupEntry.command(
                    group == null ? List.of() : group.procsFiles(),
                    runtime.defaults().openFiles(),
                    SandboxCommands.spare(runtime.tools(), helpers, isolated ? initPid : -1, ids.isPresent(), filter));
            OutputPipes.Started started =
                    OutputPipes.start(SandboxCommands.hostProcess(command, ProcessBuilder.Redirect.PIPE));
            Process p = started.process();
            OutputPipes.Readers output = started.output();
            // before it can be taken: its command then finds its streams its root's
            ids.ifPresent(range -> SandboxPipes.giveTo(p, range));
            return new SpareExecs.Spare(
                    p,
                    output,
                    group,
                    LocalProcess.spareReady(
                            p, output.stderr(), isolated, group == null ? null : group.group(), runtime.helpers()));
        } catch (IOException | RuntimeException e) {
            if (group != null && group.group() != null) {
                group.group().removeIfEmpty();
            }
            log.debug("Cannot start a spare exec helper in sandbox {}: {}", id, e.toString());
            return null;
        }
    }

    private RuntimeProcess spawn(
            ProcessSpec spec, List<String> command, Map<String, String> hostEnv, Path hostDir, boolean nsentered)
            throws ProcessStartException {
        ExecCgroup group = null;
        Process p = null;
        OutputPipes.Readers output = null;
        try {
            if (groups != null) {
                group = groups.newExec();
                command = CgroupEntry.command(
                        group.procsFiles(), runtime.defaults().openFiles(), command);
            } else if (nsentered) {
                command = CgroupEntry.command(List.of(), runtime.defaults().openFiles(), command);
            }
            if (spec.pty().isPresent()) {
                p = new PtyProcessBuilder(command.toArray(String[]::new))
                        .setEnvironment(hostEnv)
                        .setDirectory(hostDir.toString())
                        .setInitialColumns(spec.pty().get().cols())
                        .setInitialRows(spec.pty().get().rows())
                        .setConsole(false)
                        .setRedirectErrorStream(true)
                        .start();
                if (nsentered && PtyRelay.appliesTo(helpers)) {
                    // raw before anything is typed: the relay's terminal in the sandbox cooks the input (PtyRelay)
                    try {
                        RawTerminal.makeRaw(((UnixPtyProcess) p).getPty().getMasterFD());
                    } catch (IOException | RuntimeException e) {
                        p.destroyForcibly();
                        throw e;
                    }
                }
                output = new OutputPipes.Readers(p.getInputStream(), InputStream.nullInputStream());
            } else {
                ProcessBuilder pb = new ProcessBuilder(command).directory(hostDir.toFile());
                pb.environment().clear();
                pb.environment().putAll(hostEnv);
                OutputPipes.Started started = OutputPipes.start(pb);
                p = started.process();
                output = started.output();
                if (nsentered && ids.isPresent()) {
                    // while nsenter and setpriv work, ms before the command; EXEC_SCRIPT waits for it all the same
                    SandboxPipes.giveTo(p, ids.get());
                }
            }
            ProcessGroup pids = group == null ? null : group.group();
            LocalProcess process = new LocalProcess(
                    p,
                    output,
                    spec.pty().isPresent(),
                    pids,
                    LocalProcess.pidsOf(p, nsentered, pids, runtime.helpers()),
                    "'" + spec.command() + "' in sandbox " + id,
                    false,
                    runtime.helpers());
            processes.add(process);
            return process;
        } catch (IOException | RuntimeException e) {
            if (p != null) {
                p.destroyForcibly(); // started, but no one will have it
            }
            if (output != null) {
                output.close();
            }
            if (group != null && group.group() != null) {
                group.group().removeIfEmpty();
            }
            throw new ProcessStartException(
                    "cannot start " + spec.command() + " in sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void terminate(Duration grace) {
        lifecycle.terminate(grace);
    }

    /**
     * Freezes every process of the sandbox with the cgroup freezer (v1 or v2), keeping their memory, files and sockets;
     * processes started meanwhile freeze as they join the sandbox's groups.
     *
     * @throws SandboxOperationException without a freezer (cgroup freezer not mounted or not writable, cgroups
     *                                   switched off), when the sandbox is stopping, or when a process would not
     *                                   freeze in time
     */
    @Override
    public void suspend() throws SandboxOperationException {
        requireFreezer("suspended");
        lifecycle.suspend();
    }

    @Override
    public void resume() throws SandboxOperationException {
        requireFreezer("resumed");
        lifecycle.resume();
    }

    /**
     * Copies the writable layer with GNU {@code cp -a} (no link followed, one file system), frozen when the freezer
     * is available; a terminate meanwhile waits for the copy.
     */
    @Override
    public SnapshotResult snapshot(Path destination, BooleanSupplier stop)
            throws SandboxOperationException, IOException {
        boolean freeze = groups != null && groups.hasFreezer();
        // an image sandbox's changes are its overlay's upper directory, restored onto the same image
        lifecycle.snapshot(freeze, () -> {
            SandboxFiles.copyTree(fromImage ? ImageRoot.upper(dir) : layer(), destination, stop);
            return null;
        });
        if (freeze) {
            return new SnapshotResult(true, "");
        }
        return new SnapshotResult(
                false,
                "copied while the sandbox's processes ran (no cgroup freezer here: "
                        + runtime.cgroups().freezerProblem().orElse("cgroups are not in use")
                        + "), so files written during"
                        + " the copy may be caught half-way");
    }

    private void requireFreezer(String what) throws SandboxOperationException {
        if (groups == null || !groups.hasFreezer()) {
            throw new SandboxOperationException("sandbox " + id + " cannot be " + what + ": the local runtime"
                    + " suspends sandboxes with the " + runtime.cgroups().freezerName()
                    + ", which is not available on this host ("
                    + runtime.cgroups().freezerProblem().orElse("cgroups are not in use") + ")");
        }
    }

    /** Whether the sandbox's processes are frozen right now (suspended or being snapshotted); for tests. */
    boolean frozen() {
        return lifecycle.frozen();
    }

    /** Called when the init ended: unless this is a terminate, the sandbox stopped by itself. */
    private void initExited() {
        lifecycle.endedByItself(this::initExitReason);
    }

    private String initExitReason() {
        int code = init.exitValue();
        if (level == Level.BUBBLEWRAP) {
            try {
                String rest = Files.readString(BubblewrapLauncher.status(dir), StandardCharsets.UTF_8);
                Matcher m = EXIT_CODE.matcher(rest);
                if (m.find()) {
                    code = Integer.parseInt(m.group(1));
                }
            } catch (IOException e) {
                // keep bubblewrap's own status
            }
        }
        return code > 128
                ? "the sandbox's init was killed by signal " + (code - 128)
                : "the sandbox's init exited with code " + code;
    }

    @Override
    public CompletableFuture<String> onStopped() {
        return lifecycle.onStopped();
    }

    /** What this runtime does for the sandbox's lifecycle: the freezer, SIGTERM, and the release. */
    private final class Engine implements SandboxLifecycle.Engine {

        /** Freezes the sandbox's freezer group (every process of the sandbox is in it). */
        @Override
        public void freeze() throws IOException {
            groups.freeze(FREEZE_TIMEOUT_MILLIS);
        }

        @Override
        public void thaw() throws IOException {
            groups.thaw();
        }

        @Override
        public void sigterm(long deadlineNanos) {
            processes.sigtermUntilGone(deadlineNanos);
        }

        @Override
        public void stopSignal(int signal) {
            processes.started().forEach(p -> p.deliveredBySandbox(signal));
        }

        @Override
        public void stopping() {
            spares.drop();
        }

        /** Kills everything left, waits for the init, removes cgroups and the layer. */
        @Override
        public void release() {
            if (init != null
                    && init.isAlive()
                    && Procfs.pidNamespace(initPid)
                            .filter(initPidNamespace::equals)
                            .isPresent()) {
                HostSignals.signal(initPid, HostSignals.SIGKILL); // the pid namespace dies with its init
            }
            if (groups != null) {
                groups.processGroup().ifPresent(g -> g.killAll(10_000));
            } else if (!level.isolated()) {
                for (long pid : processes.hostPids()) {
                    HostSignals.signal(pid, HostSignals.SIGKILL);
                }
            }
            if (init != null) {
                waitQuietly(init, 10);
                if (init.isAlive()) {
                    init.destroyForcibly();
                    waitQuietly(init, 5);
                }
            }
            for (LocalProcess p : processes.started()) {
                if (!level.isolated() && groups == null) {
                    p.killTree();
                }
                waitQuietly(p.hostProcess(), 5);
            }
            if (egress != null) {
                egress.close();
            }
            if (groups != null) {
                groups.remove();
            }
            try {
                if (fromImage) {
                    ImageRoot.unmount(dir); // never delete through a mounted root
                }
                LayerQuota.unmount(dir);
                NoFollowDelete.delete(dir);
            } catch (IOException e) {
                log.warn("Cannot remove the writable layer of sandbox {}: {}", id, e.toString());
            }
            if (!name().equals(id)) {
                SandboxPool.deleteLink(dir.resolveSibling(id)); // handed over from the pool
            }
            ids.ifPresent(runtime::releaseIds); // nothing of the sandbox is left to run as them
        }

        @Override
        public void forget() {
            runtime.forget(LocalSandbox.this);
        }
    }

    // ---- for tests ----

    /** The host path of the writable layer: for an image sandbox, its overlay's upper directory. */
    Path layer() {
        return fromImage ? ImageRoot.upper(dir) : dir.resolve("root");
    }

    /** The spare exec helpers it keeps, ready or starting. */
    int spareExecs() {
        return spares.size();
    }

    /** The spare exec helpers ready for an exec. */
    int readySpareExecs() {
        return spares.ready();
    }

    /** The sandbox's groups, if cgroups are in use. */
    Optional<SandboxCgroup> groups() {
        return Optional.ofNullable(groups);
    }

    long initPid() {
        return initPid;
    }

    /** The name of its state directory and cgroups: its id, or the name it had in the pool before its hand-over. */
    String name() {
        return dir.getFileName().toString();
    }

    static void waitQuietly(Process p, long seconds) {
        try {
            p.waitFor(seconds, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Lexically normalizes a path: no duplicate or trailing slashes, no {@code .} or {@code ..} segments. */
    static String normalize(String path) {
        String p = Path.of(path).normalize().toString();
        return p.isEmpty() ? "." : p;
    }
}
