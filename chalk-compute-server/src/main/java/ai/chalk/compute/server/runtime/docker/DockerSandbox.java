package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.EntrypointOutput;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessSpecCheck;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxLifecycle;
import ai.chalk.compute.server.runtime.SandboxOperationException;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.ProcessWait;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One sandbox of the {@link DockerRuntime}: a container whose pid 1 is a small shell loop ({@link Scripts#INIT}).
 * Every exec runs through {@link Scripts#EXEC}, which checks the working directory and the command, reports its pid
 * and waits for the go-ahead before it becomes the command.
 *
 * <p>When the engine runs on this host (its container's init is visible in this host's {@code /proc}), signals go
 * straight to host pids and every exec gets its own cgroup ({@link ExecGroups}) so that {@code killTree} reaches
 * daemons it started; otherwise ({@code DOCKER_HOST} on another machine) signals and {@code killTree} are small
 * {@code kill} execs inside the container, and {@code killTree} follows the process tree only.
 */
final class DockerSandbox implements RuntimeSandbox {

    private static final Logger log = LoggerFactory.getLogger(DockerSandbox.class);
    private static final long START_TIMEOUT_SECONDS = 30;
    private static final int VEOF = 4;
    /** The exec group of the entrypoint, which an adopting server leaves running (it is the sandbox's service). */
    static final String ENTRYPOINT_GROUP = "chalk-entrypoint";

    /**
     * Where the container is on this host.
     *
     * @param initPid      the host pid of the container's pid 1
     * @param pidNamespace the container's pid namespace
     * @param groups       its exec groups, when this server may create them
     */
    record Host(long initPid, String pidNamespace, ExecGroups groups) {}

    private final DockerRuntime runtime;
    private final DockerEngine engine;
    private final String id;
    private final String containerId;
    private final String workdir;
    private final Host host;
    private final Set<DockerProcess> processes = ConcurrentHashMap.newKeySet();
    private final SandboxLifecycle lifecycle;

    DockerSandbox(DockerRuntime runtime, String id, String containerId, String workdir, Host host, boolean paused) {
        this.runtime = runtime;
        this.engine = runtime.engine();
        this.id = id;
        this.containerId = containerId;
        this.workdir = workdir;
        this.host = host;
        this.lifecycle = new SandboxLifecycle(id, new Engine(), paused);
    }

    DockerRuntime runtime() {
        return runtime;
    }

    /** The engine, for the calls of this sandbox's processes. */
    DockerEngine engine() {
        return engine;
    }

    String containerId() {
        return containerId;
    }

    /** Where the container is on this host; empty when its processes are not visible here. */
    Optional<Host> host() {
        return Optional.ofNullable(host);
    }

    @Override
    public String id() {
        return id;
    }

    /**
     * Starts a process. The working directory and the command (on the PATH of the process's environment) are
     * checked inside the container before the command runs, so a missing one is a {@link ProcessStartException}.
     */
    @Override
    public RuntimeProcess exec(ProcessSpec spec) throws ProcessStartException {
        return exec(spec, false);
    }

    private RuntimeProcess exec(ProcessSpec spec, boolean entrypoint) throws ProcessStartException {
        ProcessSpecCheck.commandLine(spec);
        Map<String, String> env = ProcessSpecCheck.env(spec.env());
        if (spec.pty().isPresent()) {
            env.putIfAbsent("TERM", "xterm-256color");
        }
        String wd = spec.workdir()
                .filter(w -> !w.isBlank())
                .map(DockerRuntime::normalize)
                .orElse(workdir);
        String absoluteWd = wd.startsWith("/") ? wd : DockerRuntime.normalize(workdir + "/" + wd);
        return lifecycle.exec(() -> {
            if (lifecycle.suspended()) {
                throw new ProcessStartException("sandbox " + id + " is suspended: resume it before starting"
                        + " processes (the Docker engine does not start processes in a paused container)");
            }
            return start(spec, env, wd, absoluteWd, entrypoint);
        });
    }

    private RuntimeProcess start(
            ProcessSpec spec, Map<String, String> env, String wd, String absoluteWd, boolean entrypoint)
            throws ProcessStartException {
        boolean pty = spec.pty().isPresent();
        List<String> cmd =
                new ArrayList<>(List.of("/bin/sh", "-c", Scripts.EXEC, "chalk-exec", absoluteWd, spec.command()));
        cmd.addAll(spec.args());
        String description = "'" + spec.command() + "' in sandbox " + id;
        String execId = engine.createExec(containerId, cmd, env, pty, true, () -> stateProblem());
        EngineConnection connection;
        try {
            connection = engine.startExec(execId, pty);
        } catch (IOException e) {
            throw new ProcessStartException(
                    "cannot start " + spec.command() + " in sandbox " + id + ": "
                            + Optional.ofNullable(stateProblem()).orElse(e.getMessage()),
                    e);
        }
        boolean handedOver = false;
        try {
            ExecMarker marker = ExecMarker.read(connection, pty, runtime.scheduler(), START_TIMEOUT_SECONDS);
            if (marker.line() == null) {
                String said = marker.text().trim();
                throw new ProcessStartException("cannot start " + spec.command() + " in sandbox " + id + ": "
                        + (said.isEmpty()
                                ? Optional.ofNullable(stateProblem()).orElse("the exec ended at once")
                                : said.contains("/bin/sh")
                                        ? "the image has no /bin/sh, which the docker runtime needs (" + said + ")"
                                        : said));
            }
            if (marker.line().equals(Scripts.MARK_NO_COMMAND)) {
                throw ProcessStartException.commandNotFound(spec.command());
            }
            if (marker.line().startsWith(Scripts.MARK_NOT_EXECUTABLE)) {
                throw ProcessStartException.notExecutable(
                        spec.command(), marker.line().substring(Scripts.MARK_NOT_EXECUTABLE.length()));
            }
            if (marker.line().equals(Scripts.MARK_NO_WORKDIR)) {
                throw new ProcessStartException("working directory does not exist in sandbox: " + wd);
            }
            if (!marker.line().startsWith(Scripts.MARK_OK)) {
                throw new ProcessStartException("cannot start " + spec.command() + " in sandbox " + id
                        + ": unexpected output of the exec wrapper: " + marker.line());
            }
            long pid = Long.parseLong(
                    marker.line().substring(Scripts.MARK_OK.length()).trim());
            if (pty) {
                ProcessSpec.TerminalSize size = spec.pty().get();
                engine.resizeExec(execId, size.cols(), size.rows());
            }
            long hostPid = -1;
            long hostStart = -1;
            ExecGroups.Group group = null;
            if (host != null) {
                hostPid = hostPidOf(execId, pid);
                if (hostPid > 0) {
                    hostStart = Procfs.startTime(hostPid);
                    if (host.groups() != null) {
                        try {
                            group = host.groups()
                                    .join(
                                            entrypoint ? ENTRYPOINT_GROUP : "chalk-exec-" + execId.substring(0, 16),
                                            hostPid);
                        } catch (IOException e) {
                            log.debug("No exec group for {}: {}", description, e.toString());
                        }
                    }
                }
            }
            OutputStream go = connection.out();
            go.write(pty ? VEOF : '\n');
            go.flush();
            DockerProcess process =
                    new DockerProcess(this, execId, pid, hostPid, hostStart, pty, connection, group, description);
            processes.add(process);
            if (hostPid > 0) {
                runtime.watch(process);
            }
            process.onExit().whenComplete((s, e) -> {
                processes.remove(process);
                runtime.unwatch(process);
            });
            process.start(marker.stdout(), marker.stderr());
            handedOver = true;
            return process;
        } catch (IOException e) {
            throw new ProcessStartException(
                    "cannot start " + spec.command() + " in sandbox " + id + ": "
                            + Optional.ofNullable(stateProblem()).orElse(e.getMessage()),
                    e);
        } finally {
            if (!handedOver) {
                connection.close();
            }
        }
    }

    /** Whether the container's init is gone (and with it every process of the container). */
    boolean initDied() {
        if (host != null) {
            return !Procfs.running(host.initPid());
        }
        return !engine.containerRunning(containerId);
    }

    /** Why execs cannot run, when the sandbox is not running; null when it is. */
    private String stateProblem() {
        return lifecycle.notRunning();
    }

    /**
     * The host pid of the exec, checked against what the process said its pid is; -1 when it cannot be found. It is
     * looked for in the container's cgroup first; else the engine is asked, which records an exec's pid a moment after
     * the process started (maybe after it printed its marker), so its answer is awaited briefly; last, every process
     * of the container's pid namespace is searched.
     */
    private long hostPidOf(String execId, long innerPid) {
        if (host.groups() != null) {
            // the engine puts the exec into the container's group before it runs: the quickest place to look
            for (long pid : host.groups().containerProcs()) {
                if (Procfs.innermostPid(pid) == innerPid
                        && Procfs.pidNamespace(pid)
                                .filter(host.pidNamespace()::equals)
                                .isPresent()) {
                    return pid;
                }
            }
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
        long pause = 200_000;
        while (true) {
            DockerEngine.ExecState st = engine.inspectExec(execId);
            if (st == null) {
                return -1;
            }
            long hostPid = st.pid() == null ? -1 : st.pid();
            if (hostPid > 1
                    && Procfs.innermostPid(hostPid) == innerPid
                    && Procfs.pidNamespace(hostPid)
                            .filter(host.pidNamespace()::equals)
                            .isPresent()) {
                return hostPid;
            }
            if (System.nanoTime() > deadline) {
                break;
            }
            LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, 20_000_000);
        }
        for (long pid : Procfs.processesInNamespace(host.pidNamespace())) {
            if (Procfs.innermostPid(pid) == innerPid) {
                return pid;
            }
        }
        return -1;
    }

    // ---- signals inside the container, for engines on other hosts ----

    void signalInside(long pid, int signal) {
        engine.runInside(
                containerId,
                List.of("/bin/sh", "-c", Scripts.KILL, "chalk-kill", Integer.toString(signal), Long.toString(pid)));
    }

    void killTreeInside(long pid) {
        engine.runInside(
                containerId, List.of("/bin/sh", "-c", Scripts.KILL_TREE, "chalk-kill-tree", Long.toString(pid)));
    }

    // ---- suspend, resume, snapshot ----

    /** Pauses the container (the engine freezes its cgroup); execs are refused until {@link #resume()}. */
    @Override
    public void suspend() throws SandboxOperationException {
        lifecycle.suspend();
    }

    @Override
    public void resume() throws SandboxOperationException {
        lifecycle.resume();
    }

    /**
     * Copies what the sandbox changed or created in its container's filesystem (as the engine's {@code diff} lists
     * it, without volumes and the files the engine manages: {@code /etc/hosts}, {@code /etc/hostname},
     * {@code /etc/resolv.conf}) from the engine's export of the container, with the container paused meanwhile. Files
     * the sandbox deleted from its image are not recorded (a copy has no way to say "deleted"); the note says so when
     * there were any.
     */
    @Override
    public SnapshotResult snapshot(Path destination, BooleanSupplier stop)
            throws SandboxOperationException, IOException {
        return lifecycle.snapshot(true, () -> {
            int deleted = engine.exportChanges(containerId, mountPaths(), destination, stop);
            return new SnapshotResult(
                    true,
                    deleted == 0
                            ? ""
                            : deleted + " file(s) the sandbox deleted from its"
                                    + " image are not part of the snapshot: a sandbox created from it has them again");
        });
    }

    /** The volume mount points, which a snapshot leaves out. */
    List<String> mountPaths() {
        return engine.mountPathsOf(containerId);
    }

    /** Whether the container is paused right now (suspended or being snapshotted); for tests. */
    boolean paused() {
        return lifecycle.frozen();
    }

    // ---- stopping ----

    /**
     * SIGTERM to every process in the container but its init, then, after {@code grace} or once they are all gone,
     * the container is removed (the engine kills what is left with SIGKILL) together with its writable layer.
     */
    @Override
    public void terminate(Duration grace) {
        lifecycle.terminate(grace);
    }

    private void terminateGracefully(long deadline) {
        if (host != null) {
            List<Long> targets = userProcesses();
            if (targets.isEmpty()) {
                return;
            }
            processes.forEach(p -> p.deliveredBySandbox(HostSignals.SIGTERM));
            for (long pid : targets) {
                HostSignals.signal(pid, HostSignals.SIGTERM);
            }
            ProcessWait.untilGone(targets, deadline);
            return;
        }
        if (engine.userProcessCount(containerId) == 0) {
            return;
        }
        processes.forEach(p -> p.deliveredBySandbox(HostSignals.SIGTERM));
        engine.runInside(containerId, List.of("/bin/sh", "-c", Scripts.KILL, "chalk-kill", "15", "-1"));
        while (System.nanoTime() < deadline && engine.userProcessCount(containerId) > 0) {
            LockSupport.parkNanos(Math.min(50_000_000, Math.max(0, deadline - System.nanoTime())));
        }
    }

    /** The container's processes other than its init and the init's sleep, as host pids. */
    private List<Long> userProcesses() {
        List<Long> pids = new ArrayList<>();
        for (long pid : Procfs.processesInNamespace(host.pidNamespace())) {
            if (pid == host.initPid()) {
                continue;
            }
            if (isKeepAlive(pid)) {
                continue;
            }
            pids.add(pid);
        }
        return pids;
    }

    /**
     * Kills what an earlier server's execs left running, for a sandbox adopted after a restart: this server has no
     * record of them, so nobody could ever read their output, signal or wait for them. Spared: the init, its
     * keep-alive, and the entrypoint with whatever it started (its exec group). Returns how many were killed; needs
     * the container's processes on this host and its exec groups (with an engine elsewhere nothing is killed).
     */
    int killUnrecorded() {
        if (host == null || host.groups() == null) {
            return 0;
        }
        String entrypointGroup = containerId + "/" + ENTRYPOINT_GROUP;
        int killed = 0;
        for (int round = 0; round < 20; round++) {
            List<Long> targets = new ArrayList<>();
            for (long pid : Procfs.processesInNamespace(host.pidNamespace())) {
                String groups = Procfs.cgroups(pid);
                if (pid == host.initPid() || groups.contains(entrypointGroup)) {
                    continue;
                }
                // the keep-alive is the init's own child, in no exec group; an exec's orphan re-parented to the init
                // and named like it is still in its exec's group
                boolean inExecGroup = groups.contains(containerId + "/chalk-");
                if (!inExecGroup && Procfs.parentPid(pid) == host.initPid()) {
                    continue;
                }
                targets.add(pid);
            }
            if (targets.isEmpty()) {
                break;
            }
            for (long pid : targets) {
                HostSignals.signal(pid, HostSignals.SIGSTOP); // stopped first, so that nobody forks meanwhile
            }
            for (long pid : targets) {
                HostSignals.signal(pid, HostSignals.SIGKILL);
            }
            killed += targets.size();
            ProcessWait.untilGone(targets, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
        }
        return killed;
    }

    /**
     * Whether a host pid of the container is its init's keep-alive: the init's child, running sleep, and (where exec
     * groups tell) in no exec group, as an exec's orphan re-parented to the init and running sleep would be.
     */
    private boolean isKeepAlive(long pid) {
        if (Procfs.parentPid(pid) != host.initPid()
                || host.groups() != null && Procfs.cgroups(pid).contains(containerId + "/chalk-")) {
            return false;
        }
        // or the init's fork that is about to run it: it still has the init's command line, ignores SIGTERM as the
        // init does, and once it runs sleep an hour, a terminate waiting for it would wait out its grace period
        String command = Procfs.commandLine(pid);
        return command.startsWith(Scripts.INIT_SLEEP + " ") || command.equals(Procfs.commandLine(host.initPid()));
    }

    /** Called by the runtime when the container stopped: unless this is a terminate, it stopped by itself. */
    void containerStopped(String reason) {
        lifecycle.endedByItself(() -> reason);
    }

    @Override
    public CompletableFuture<String> onStopped() {
        return lifecycle.onStopped();
    }

    /** What the engine does for the sandbox's lifecycle. */
    private final class Engine implements SandboxLifecycle.Engine {

        /** Pauses the container: the engine freezes its cgroup. */
        @Override
        public void freeze() {
            engine.pause(containerId);
        }

        @Override
        public void thaw() {
            engine.unpause(containerId);
        }

        @Override
        public void sigterm(long deadlineNanos) {
            terminateGracefully(deadlineNanos);
        }

        @Override
        public void stopSignal(int signal) {
            processes.forEach(p -> p.deliveredBySandbox(signal));
        }

        /** Removes the container with its writable layer (and anything still running). */
        @Override
        public void release() {
            engine.removeContainer(containerId);
            runtime.releaseVolumes(id);
            // a caller that stopped reading must not keep an output thread waiting for room forever
            List<DockerProcess> left = List.copyOf(processes);
            if (!left.isEmpty()) {
                runtime.scheduler().schedule(() -> left.forEach(DockerProcess::abandonOutput), 5, TimeUnit.SECONDS);
            }
        }

        @Override
        public void forget() {
            runtime.forget(DockerSandbox.this);
        }
    }

    // ---- the entrypoint ----

    void startEntrypoint(List<String> entrypoint) throws ProcessStartException {
        RuntimeProcess p = exec(
                new ProcessSpec(
                        entrypoint.get(0),
                        entrypoint.subList(1, entrypoint.size()),
                        Optional.empty(),
                        Map.of(),
                        Optional.empty()),
                true);
        EntrypointOutput.follow(p, id, runtime.helpers(), log);
    }

    @Override
    public String toString() {
        return "sandbox " + id + " (container " + containerId.substring(0, Math.min(12, containerId.length())) + ")";
    }
}
