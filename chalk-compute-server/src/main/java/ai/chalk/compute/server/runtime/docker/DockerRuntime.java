package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.egress.EgressEndpoint;
import ai.chalk.compute.server.egress.EgressOptions;
import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.host.StateDirLock;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxesCap;
import ai.chalk.compute.server.threads.DaemonThreads;
import com.github.dockerjava.api.command.InspectContainerResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes as containers of a Docker Engine (Docker, Podman and Colima speak its API), through docker-java.
 *
 * <p><b>A sandbox</b> is a container of {@link SandboxSpec#image()} (or the runtime's default image) whose pid 1 is
 * a shell loop that stays up and reaps orphans ({@link Scripts#INIT}; the image needs {@code /bin/sh} and
 * {@code sleep}). It is labelled {@value #LABEL_SANDBOX}{@code =<id>} and {@value #LABEL_SERVER}{@code =<key>}, the
 * key kept in this runtime's state directory ({@link ServerKey}), so that {@link #reconcile} finds the containers of this server
 * after a restart: those still running and still wanted are adopted (cleared of what execs cut by the restart left
 * running), the rest removed. Settings: network mode {@code none} (loopback only) unless the spec grants the network
 * (then {@link NetworkFence#SANDBOXES}); {@code NanoCpus} and {@code Memory} (swap included, so no swap) from the
 * limits; at most {@value SandboxContainerDef#PIDS_MAX} processes; capabilities dropped but for
 * {@link SandboxContainerDef#KEPT_CAPABILITIES} (what package managers and file ownership need; no raw sockets, mknod,
 * chroot or capability changes); {@code no-new-privileges}; the spec's env; the image's WORKDIR when it declares one,
 * else the spec's workdir (created by the engine); volumes as bind mounts, {@code nosuid,nodev} ({@link VolumeMounts});
 * the entrypoint as a first exec whose output goes to the log; with a lifetime, an init that ends the container after
 * it ({@link Scripts#INIT}).
 *
 * <p><b>Execs</b> go through the Engine API: exec create, then exec start over a raw connection that carries stdin
 * (half-closed for EOF) and the multiplexed stdout/stderr (one raw stream with a TTY). See {@link DockerSandbox}
 * and {@link DockerProcess} for pids, signals and {@code killTree}.
 *
 * <p>The engine is {@code DOCKER_HOST} when set, else {@code unix:///var/run/docker.sock}, unless the builder names
 * one. Volume sources are paths on the engine's machine, so with an engine on another machine volumes do not work,
 * and signals and {@code killTree} take an exec each (see {@link DockerSandbox}); initial filesystems and snapshots
 * are streamed through the API and work either way.
 *
 * <p>{@link DockerSandbox#suspend()} pauses the container; {@link DockerSandbox#snapshot} copies what the sandbox
 * changed from the engine's export; {@link SandboxSpec#initialFilesystem()} is copied into the container before it
 * starts.
 *
 * <p>This class is the lifecycle: it checks specs, stages volumes, keeps the sandboxes it owns and notices their ends.
 * What a container is given is a {@link SandboxContainerDef}; every call to the engine goes through
 * {@link DockerEngine}.
 */
public final class DockerRuntime implements SandboxRuntime {

    private static final Logger log = LoggerFactory.getLogger(DockerRuntime.class);

    /** The engine used when neither the builder nor {@code DOCKER_HOST} names one. */
    public static final String DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock";
    /**
     * The image of sandboxes created without one, unless the builder sets another: Debian's slim image, pulled on
     * first use where a registry is reachable.
     */
    public static final String DEFAULT_IMAGE = "debian:bookworm-slim";
    /** Label naming the sandbox a container belongs to. */
    public static final String LABEL_SANDBOX = "ai.chalk.compute.sandbox";
    /** Label naming the server (its state directory's key) that owns a container. */
    public static final String LABEL_SERVER = "ai.chalk.compute.server";
    /**
     * How long after its lifetime a container ends itself: the server's timer (a graceful terminate) comes first
     * while the server lives.
     */
    static final Duration LIFETIME_MARGIN = Duration.ofSeconds(30);
    /** How long {@link #close()} lets a sandbox's processes react to SIGTERM. */
    static final Duration CLOSE_GRACE = Duration.ofSeconds(2);

    private final Path stateDir;
    private final String key;
    private final String defaultImage;
    private final boolean useHost;
    private final DockerEngine engine;
    private final Isolation isolation;
    private final StateDirLock lock;
    private final ConcurrentMap<String, DockerSandbox> sandboxes = new ConcurrentHashMap<>();
    private final ExecutorService helpers;
    private final ScheduledExecutorService scheduler;
    private final DockerImageBuilder imageBuilder;
    private final NetworkFence fence;
    /** Ends the sandbox filling the disk of the engine's data root, where that disk is this host's. */
    private final Optional<LayerDiskWatch> diskWatch;
    /** The capped parent group of the containers. */
    private final ContainersGroup containersGroup;
    /** The networks and proxy of sandboxes with a network policy. */
    private final DockerEgress egress;

    private final VolumeMounts volumes;
    private final ContainerTerminals terminals;
    private final ExitWatch exits;
    private final ContainerAdoption adoption;
    private final Duration lifetimeMargin;
    /** How many sandboxes may run at once, adopted ones and replicas included. */
    private final int maxSandboxes;

    private final long sandboxMemoryBytes;
    /** Starts under way, each holding a place until its sandbox is among {@link #sandboxes} or failed (guarded by it). */
    private int starting;

    private volatile boolean closed;

    /** Settings of a {@link DockerRuntime}. */
    public static final class Builder {
        private final Path stateDir;
        private String dockerHost;
        private String defaultImage = DEFAULT_IMAGE;
        private boolean useHost = true;
        private Duration lifetimeMargin = LIFETIME_MARGIN;
        private int maxSandboxes = ai.chalk.compute.server.runtime.local.SandboxDefaults.STANDARD.maxSandboxes();
        private long sandboxMemoryBytes = ai.chalk.compute.server.runtime.local.SandboxDefaults.STANDARD.memoryBytes();
        private SandboxesCap sandboxesCap = SandboxesCap.ofHost();
        private long layerDiskReserve;
        private EgressOptions egress = EgressOptions.DEFAULTS;

        private Builder(Path stateDir) {
            this.stateDir = Objects.requireNonNull(stateDir, "stateDir");
        }

        /** The engine: {@code unix:///path} or {@code tcp://host:port}. Default: {@code DOCKER_HOST}, else the local socket. */
        public Builder dockerHost(String dockerHost) {
            this.dockerHost = dockerHost == null || dockerHost.isBlank() ? null : dockerHost;
            return this;
        }

        /** The image of sandboxes created without one. Default {@value DockerRuntime#DEFAULT_IMAGE}. */
        public Builder defaultImage(String image) {
            if (image == null || image.isBlank()) {
                throw new IllegalArgumentException("the default image must not be empty");
            }
            this.defaultImage = image.trim();
            return this;
        }

        /**
         * Whether to act on containers' processes from this host when the engine runs here (host pids, exec
         * cgroups); off, the runtime behaves as with an engine on another machine. Default on.
         */
        Builder useHost(boolean useHost) {
            this.useHost = useHost;
            return this;
        }

        /**
         * How the egress proxy of sandboxes with a network policy resolves names and which CAs it trusts; default the
         * system resolver and the JDK's CAs.
         */
        public Builder egress(EgressOptions egress) {
            this.egress = Objects.requireNonNull(egress, "egress");
            return this;
        }

        /** How long after its lifetime a container ends itself; for tests, which cannot wait the default. */
        Builder lifetimeMargin(Duration margin) {
            this.lifetimeMargin = margin;
            return this;
        }

        /**
         * Connects to the engine and returns the runtime.
         *
         * @throws IllegalStateException when no engine answers, or another runtime uses the state directory
         */
        public DockerRuntime build() {
            return new DockerRuntime(this);
        }

        /**
         * The bytes the disk of the engine's data root keeps free of what sandboxes write to their layers (see
         * {@link LayerDiskWatch}; default {@link ai.chalk.compute.server.runtime.host.DiskReserve#of}); set in tests.
         */
        Builder layerDiskReserve(long bytes) {
            this.layerDiskReserve = bytes;
            return this;
        }

        /**
         * What all sandboxes may hold together (default: three quarters of the host's memory, half its process ids);
         * smaller in tests, to show it holds.
         */
        Builder sandboxesCap(SandboxesCap cap) {
            this.sandboxesCap = cap;
            return this;
        }

        /**
         * The memory of a sandbox whose spec sets none (default 4 GiB, as on the local runtime): without it a container
         * may take the host's, and the OOM killer then picks among the server and every tenant's sandboxes.
         */
        public Builder sandboxMemory(long bytes) {
            this.sandboxMemoryBytes = bytes;
            return this;
        }

        /**
         * How many sandboxes (and function replicas) may run at once; a start past it is refused. Every one is a
         * container on the engine with threads of the server's watching it. Default 256, as the local runtime's.
         */
        public Builder maxSandboxes(int sandboxes) {
            if (sandboxes < 1) {
                throw new IllegalArgumentException("max sandboxes must be at least 1, not " + sandboxes);
            }
            this.maxSandboxes = sandboxes;
            return this;
        }
    }

    /** @param stateDir a directory owned by this runtime; it keeps the key its containers are labelled with ({@link ServerKey}) */
    public static Builder builder(Path stateDir) {
        return new Builder(stateDir);
    }

    private DockerRuntime(Builder b) {
        this.defaultImage = b.defaultImage;
        this.useHost = b.useHost;
        this.lifetimeMargin = b.lifetimeMargin;
        this.maxSandboxes = b.maxSandboxes;
        this.sandboxMemoryBytes = b.sandboxMemoryBytes;
        // no thread runs before the first task, so a failed connection below leaves nothing to stop
        this.helpers = Executors.newCachedThreadPool(DaemonThreads.numbered("chalk-docker"));
        this.engine = DockerEngine.connect(resolveHost(b.dockerHost), helpers);
        try {
            Files.createDirectories(b.stateDir);
            this.stateDir = b.stateDir.toRealPath();
            this.lock = StateDirLock.acquire(stateDir, "docker runtime");
        } catch (IOException e) {
            engine.close();
            throw new UncheckedIOException("cannot create the docker runtime's state directory " + b.stateDir, e);
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
        String kept;
        try {
            kept = ServerKey.of(stateDir, engine::hasContainersOf);
        } catch (RuntimeException e) {
            lock.release();
            engine.close();
            throw e;
        }
        this.key = kept;
        boolean remapped = engine.rootIsRemapped();
        this.scheduler = DaemonThreads.timer("chalk-docker-timer");
        this.exits = new ExitWatch(engine, helpers, scheduler, () -> closed, s -> sandboxes.get(s.id()) == s);
        boolean engineHere = useHost && engine.onUnixSocket();
        this.fence = new NetworkFence(engine.client(), engineHere);
        try {
            fence.createNetworks();
        } catch (RuntimeException e) {
            disconnect();
            throw e;
        }
        String fenceProblem = fence.install();
        this.egress = new DockerEgress(engine.client(), stateDir.resolve("egress"), b.egress, engineHere, key);
        this.volumes = VolumeMounts.under(stateDir, engineHere);
        this.terminals = ContainerTerminals.under(stateDir, volumes.problem(), remapped);
        terminals.releaseAll(); // a killed server's, made for a container it was starting
        this.adoption = new ContainerAdoption(this, engine, sandboxes, exits, volumes);
        this.imageBuilder =
                new DockerImageBuilder(engine.client(), engine.http(), fence, helpers, buildShell(stateDir, engine));
        this.diskWatch =
                LayerDiskWatch.start(engine, key, engineHere, b.layerDiskReserve, scheduler, helpers, sandboxes::get);
        // made last: nothing after it fails, so a failed start leaves no group behind
        this.containersGroup = ContainersGroup.make(key, engine.cgroupDriver(), engineHere, b.sandboxesCap);
        this.isolation = new Isolation(
                "container",
                "Docker Engine " + engine.version() + " at " + engine.host()
                        + ": each sandbox is a container with its own pid, mount, network (loopback only unless its network"
                        + " policy grants the network: then the " + NetworkFence.SANDBOXES
                        + " bridge, where sandboxes cannot"
                        + " reach each other"
                        + (fenceProblem == null
                                ? ", the host's addresses or link-local ones"
                                : " (but may reach the host's addresses: " + fenceProblem + ")")
                        + "), ipc and uts namespaces and a"
                        + " writable layer removed at terminate ("
                        + diskWatch
                                .map(w -> "the one that wrote most is ended when the engine's disk is down to "
                                        + (w.reserve() >> 20) + " MiB free")
                                .orElse("without a bound: the engine's disk is not this host's")
                        + "); capabilities limited to "
                        + SandboxContainerDef.KEPT_CAPABILITIES.stream()
                                .map(Enum::name)
                                .toList()
                        + ", no-new-privileges, Docker's default seccomp profile; volumes mounted "
                        + (volumes.problem() == null
                                ? "nosuid,nodev"
                                : "as they are (not nosuid,nodev: " + volumes.problem() + ")")
                        + "; "
                        + (terminals.problem() == null
                                ? "at most " + SandboxDevices.PTYS + " terminals (a devpts of its own)"
                                : "the engine's devpts, without a limit on terminals (" + terminals.problem() + ")")
                        + "; cpu, memory (no swap) and " + SandboxContainerDef.PIDS_MAX + " processes at most by the"
                        + " engine's cgroups, "
                        + containersGroup
                                .parent()
                                .map(g -> "all sandboxes together within " + b.sandboxesCap.describe() + " (" + g + ")")
                                .orElseGet(() -> "without a cap on all sandboxes together ("
                                        + containersGroup.problem().orElseThrow() + ")")
                        + "; a container given a lifetime ends itself after it, server or not; container root"
                        + " is "
                        + (remapped
                                ? "an unprivileged id of the host (the engine remaps user namespaces)"
                                : "the host's root without capabilities (the engine does not remap user namespaces: dockerd"
                                        + " --userns-remap=default would)"),
                true);
        log.info("Docker runtime: engine {} at {}, default image {}", engine.version(), engine.host(), defaultImage);
    }

    /**
     * The shell of image build steps (see {@link BuildShell}): the host's helpers, when the engine runs binaries of this
     * host's architecture.
     */
    private static Optional<BuildShell> buildShell(Path stateDir, DockerEngine engine) {
        String engineArch = engine.arch();
        String host = System.getProperty("os.arch");
        boolean same = engineArch != null
                && (engineArch.equals(host)
                        || engineArch.equals("amd64") && host.equals("x86_64")
                        || engineArch.equals("x86_64") && host.equals("amd64")
                        || engineArch.equals("arm64") && host.equals("aarch64"));
        if (!same) {
            log.warn(
                    "Image build steps keep Docker's default capabilities: the engine runs {} binaries, this"
                            + " host is {}",
                    engineArch,
                    host);
            return Optional.empty();
        }
        SandboxTools tools = SandboxTools.forImages(stateDir.resolve("build-tools"));
        tools.problem().ifPresent(p -> log.warn("Image build steps keep Docker's default capabilities: {}", p));
        return BuildShell.of(tools);
    }

    /** The engine to use: {@code explicit}, else {@code DOCKER_HOST}, else {@value #DEFAULT_DOCKER_HOST}. */
    public static String resolveHost(String explicit) {
        if (explicit != null && !explicit.isBlank()) {
            return explicit.trim();
        }
        String env = System.getenv("DOCKER_HOST");
        return env != null && !env.isBlank() ? env.trim() : DEFAULT_DOCKER_HOST;
    }

    /**
     * Whether a Docker engine answers at {@code dockerHost} (null: {@code DOCKER_HOST} or the local socket) within
     * {@code timeout}; for choosing the runtime {@code auto}.
     */
    public static boolean engineAnswers(String dockerHost, Duration timeout) {
        return DockerEngine.answers(resolveHost(dockerHost), timeout);
    }

    @Override
    public int maxSandboxes() {
        return maxSandboxes;
    }

    @Override
    public String name() {
        return "docker";
    }

    @Override
    public Isolation isolation() {
        return isolation;
    }

    /** The engine this runtime talks to. */
    public String dockerHost() {
        return engine.host();
    }

    /** The image of sandboxes created without one. */
    public String defaultImage() {
        return defaultImage;
    }

    @Override
    public RuntimeSandbox start(SandboxSpec spec) throws RuntimeStartException {
        return start(spec, (Duration) null);
    }

    /**
     * Starts a sandbox whose container stops by itself {@code lifetime} plus {@link #LIFETIME_MARGIN} after it
     * started (its init counts; see {@link Scripts#INIT}), whether or not this server is still there to stop it.
     */
    @Override
    public RuntimeSandbox start(SandboxSpec spec, Duration lifetime) throws RuntimeStartException {
        if (closed) {
            throw new RuntimeStartException("the docker runtime is shut down");
        }
        synchronized (sandboxes) {
            if (sandboxes.size() + starting >= maxSandboxes) {
                throw RuntimeStartException.full(maxSandboxes);
            }
            starting++;
        }
        try {
            return startInPlace(spec, lifetime);
        } finally {
            synchronized (sandboxes) {
                starting--;
            }
        }
    }

    /** {@link #start(SandboxSpec, Duration)}, its place among the runtime's sandboxes held. */
    private RuntimeSandbox startInPlace(SandboxSpec spec, Duration lifetime) throws RuntimeStartException {
        String id = spec.id();
        String workdir = spec.workdir();
        Map<String, String> env = spec.env();
        if (spec.initialFilesystem().isPresent()
                && !Files.isDirectory(spec.initialFilesystem().get(), LinkOption.NOFOLLOW_LINKS)) {
            throw new RuntimeStartException(
                    "the initial filesystem " + spec.initialFilesystem().get() + " is not a directory");
        }
        if (spec.network()) {
            fence.install(); // repairs rules a dockerd restart or an operator flushed
        }
        boolean isDefault = spec.image().isEmpty();
        String image = isDefault ? defaultImage : spec.image();
        String imageWorkdir = engine.ensureImage(image, isDefault);
        if (!imageWorkdir.isEmpty()) {
            workdir = normalize(imageWorkdir); // the image says where its processes work (WORKDIR)
        }

        if (sandboxes.containsKey(id)) {
            throw new RuntimeStartException("a sandbox with id " + id + " is already running");
        }
        List<Path> sources;
        try {
            sources = volumes.stage(id, spec.volumes());
        } catch (IOException e) {
            throw new RuntimeStartException("cannot mount the sandbox's volumes nosuid,nodev: " + e.getMessage(), e);
        }
        DockerEgress.Prepared way = null;
        if (spec.egress().isPresent()) {
            try {
                way = egress.prepare(id, spec.egress().get());
            } catch (RuntimeStartException e) {
                volumes.release(id);
                throw e;
            }
            env = withProxy(env, way.proxy());
        }
        Optional<Path> ptys;
        try {
            ptys = terminals.mount(id);
        } catch (IOException e) {
            volumes.release(id);
            egress.release(id);
            throw new RuntimeStartException("cannot mount the sandbox's terminals: " + e.getMessage(), e);
        }
        SandboxContainerDef def = SandboxContainerDef.of(
                spec.withMemoryUnlessSet(sandboxMemoryBytes),
                image,
                workdir,
                env,
                sources,
                key,
                Optional.ofNullable(lifetime).map(l -> l.plus(lifetimeMargin)),
                containersGroup.parent());
        if (way != null) {
            def = def.withEgress(way.network(), way.binds());
        }
        if (ptys.isPresent()) {
            def = def.withTerminals(ptys.get());
        }
        String containerId;
        try {
            containerId = engine.createContainer(def);
        } catch (RuntimeStartException e) {
            ptys.ifPresent(terminals::release);
            volumes.release(id);
            egress.release(id);
            throw e;
        }
        DockerSandbox sandbox;
        try {
            InspectContainerResponse inspected;
            try {
                if (spec.initialFilesystem().isPresent()) {
                    engine.copyInto(containerId, spec.initialFilesystem().get());
                }
                inspected = engine.start(containerId);
            } finally {
                ptys.ifPresent(terminals::release); // a started container keeps its own copy of the mount
            }
            sandbox = new DockerSandbox(this, id, containerId, workdir, hostOf(inspected), false);
            Long pid = inspected.getState().getPidLong();
            if (way != null && pid != null && pid > 1) {
                egress.fence(pid, way.proxy());
            }
            if (sandboxes.putIfAbsent(id, sandbox) != null) {
                throw new RuntimeStartException("a sandbox with id " + id + " is already running");
            }
        } catch (RuntimeStartException | RuntimeException e) {
            engine.removeContainer(containerId);
            volumes.release(id);
            egress.release(id);
            if (e instanceof RuntimeStartException rse) {
                throw rse;
            }
            throw new RuntimeStartException("cannot start sandbox " + id + ": " + DockerEngine.engineMessage(e), e);
        }
        exits.container(sandbox);
        if (!spec.entrypoint().isEmpty()) {
            try {
                sandbox.startEntrypoint(spec.entrypoint());
            } catch (ProcessStartException e) {
                sandbox.terminate(Duration.ZERO);
                throw new RuntimeStartException("the entrypoint could not be started: " + e.getMessage(), e);
            }
        }
        if (closed) {
            sandbox.terminate(Duration.ZERO);
            throw new RuntimeStartException("the docker runtime is shut down");
        }
        log.debug("Sandbox {} started as container {} of {}", id, containerId, image);
        return sandbox;
    }

    /** Where a container's processes are on this host, when they are visible here. */
    DockerSandbox.Host hostOf(InspectContainerResponse inspected) {
        Long pid = inspected.getState().getPidLong();
        String containerId = inspected.getId();
        if (!useHost
                || pid == null
                || pid <= 1
                || Procfs.innermostPid(pid) != 1
                || !Procfs.cgroups(pid).contains(containerId)) {
            return null;
        }
        Optional<String> ns = Procfs.pidNamespace(pid);
        if (ns.isEmpty()) {
            return null;
        }
        ContainerSocketBuffers.limit(pid, containerId);
        containersGroup.checkPlacement(pid, containerId);
        ExecGroups groups = ExecGroups.of(pid, containerId).orElse(null);
        if (groups == null) {
            log.debug("No exec groups for container {}: killTree follows the process tree", containerId);
        }
        return new DockerSandbox.Host(pid, ns.get(), groups);
    }

    /**
     * Finds this server's containers (by its {@value #LABEL_SERVER} label): running ones whose sandbox the store
     * still believes running are adopted; the others are removed.
     */
    @Override
    public Collection<RuntimeSandbox> reconcile(Collection<String> runningIds) {
        Collection<RuntimeSandbox> adopted = adoption.reconcile(runningIds);
        egress.removeLeftovers();
        return adopted;
    }

    /** Unmounts the staged volumes of a sandbox whose container is gone, and removes its egress network. */
    void releaseVolumes(String sandboxId) {
        volumes.release(sandboxId);
        egress.release(sandboxId);
    }

    /**
     * {@code env} with the egress proxy's variables (over the spec's own: there is nothing else to reach), a
     * {@code JAVA_TOOL_OPTIONS} of the spec's kept after the proxy's.
     */
    private static Map<String, String> withProxy(Map<String, String> env, java.net.InetAddress proxy) {
        Map<String, String> all = new java.util.LinkedHashMap<>(env);
        Map<String, String> proxyEnv = EgressEndpoint.sandboxEnv(proxy);
        all.putAll(proxyEnv);
        String own = env.get("JAVA_TOOL_OPTIONS");
        if (own != null && !own.isBlank()) {
            all.put("JAVA_TOOL_OPTIONS", proxyEnv.get("JAVA_TOOL_OPTIONS") + " " + own);
        }
        return all;
    }

    /** Terminates every sandbox (SIGTERM, then SIGKILL after a short grace), and disconnects. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        List<Future<?>> stops = new ArrayList<>();
        for (DockerSandbox s : List.copyOf(sandboxes.values())) {
            stops.add(helpers.submit(() -> s.terminate(CLOSE_GRACE)));
        }
        for (Future<?> f : stops) {
            try {
                f.get();
            } catch (Exception e) {
                log.warn("Stopping a sandbox failed: {}", e.toString());
            }
        }
        closed = true;
        diskWatch.ifPresent(LayerDiskWatch::close);
        egress.close();
        containersGroup.remove();
        disconnect();
    }

    /** Disconnects without stopping anything, as a crashed server would; for tests of {@link #reconcile}. */
    void abandon() {
        closed = true;
        egress.abandon();
        disconnect();
    }

    private void disconnect() {
        helpers.shutdownNow();
        scheduler.shutdownNow();
        engine.close();
        lock.release();
    }

    // ---- for sandboxes and processes ----

    ExecutorService helpers() {
        return helpers;
    }

    /** Runs tasks on the helpers, or, once the runtime is closed, elsewhere: exit statuses must still be read. */
    Executor lastingExecutor() {
        return task -> {
            try {
                helpers.execute(task);
            } catch (RejectedExecutionException e) {
                ForkJoinPool.commonPool().execute(task);
            }
        };
    }

    ScheduledExecutorService scheduler() {
        return scheduler;
    }

    /** The engine, for the sandboxes' and processes' own calls. */
    DockerEngine engine() {
        return engine;
    }

    void forget(DockerSandbox sandbox) {
        sandboxes.remove(sandbox.id(), sandbox);
    }

    /** Starts watching an exec's host process, to notice its end while a daemon holds its output open. */
    void watch(DockerProcess p) {
        exits.process(p);
    }

    void unwatch(DockerProcess p) {
        exits.forget(p);
    }

    // ---- helpers ----

    /** Lexically normalizes a path: no duplicate or trailing slashes, no {@code .} or {@code ..} segments. */
    static String normalize(String path) {
        String p = Path.of(path).normalize().toString();
        return p.isEmpty() ? "." : p;
    }

    /** The name of a sandbox's container. */
    static String containerName(String id) {
        return "chalk-" + id;
    }

    /** This runtime's {@value #LABEL_SERVER} label value. */
    String key() {
        return key;
    }

    /** Builds image specs through this engine's build API; see {@link DockerImageBuilder}. */
    @Override
    public ai.chalk.compute.server.image.ImageBuilder imageBuilder() {
        return imageBuilder;
    }
}
