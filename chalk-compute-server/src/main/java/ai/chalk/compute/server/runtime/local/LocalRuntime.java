package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.egress.EgressOptions;
import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.FileTable;
import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.LayerQuota;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.host.SandboxesMount;
import ai.chalk.compute.server.runtime.host.StateDirKey;
import ai.chalk.compute.server.runtime.host.StateDirLock;
import ai.chalk.compute.server.runtime.host.WhenServerDies;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupDriver;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupEntry;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.local.image.LocalImage;
import ai.chalk.compute.server.runtime.local.image.LocalImageBuilder;
import ai.chalk.compute.server.runtime.local.image.LocalImages;
import ai.chalk.compute.server.runtime.local.image.OverlayMount;
import ai.chalk.compute.server.runtime.network.Egress;
import ai.chalk.compute.server.runtime.userns.IdRange;
import ai.chalk.compute.server.runtime.userns.SandboxPipes;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import ai.chalk.compute.server.runtime.userns.UserNamespacePool;
import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded, daemonless runtime: each sandbox is a set of Linux namespaces around a private writable root,
 * with cgroup limits where the host permits.
 *
 * <p>The isolation tool is chosen once, at construction, by actually running it: bubblewrap ({@code bwrap})
 * creates a sandbox's namespaces and root and keeps a sleeping init in them; util-linux {@code unshare} does the
 * same with a small mount script when bubblewrap is missing or broken. Every exec joins the init's namespaces with
 * util-linux {@code nsenter}, drops all capabilities with {@code setpriv} and gets a clean environment from
 * {@code env -i}, so a process started by one exec (a daemon, a tmux server) lives on and is visible to the next.
 * A sandbox in repeated use keeps two such chains ready ahead of time, ending in a small perl helper instead of
 * {@code env} that reads the command from its stdin; an exec then costs little
 * more than the command's own start. Without perl every exec takes the direct path.
 * With no working tool, {@link LocalIsolation#AUTO} runs plain host processes and logs a warning,
 * {@link LocalIsolation#REQUIRED} refuses to construct. {@link #isolation()} says what is in force.
 *
 * <p>A sandbox created without an image sees the host's system directories read-only under a private writable
 * layer. One created from an image ({@link SandboxSpec#image()}: an image of the Docker engine, {@code oci:NAME[:TAG]}
 * or {@code oci-archive:NAME[:TAG]} from the OCI import directory, or {@code chalk-local/<hash>} built by
 * {@link LocalImageBuilder}) gets the image's file system as its root instead: an overlay, mounted by the server,
 * of the image's layers (unpacked once into {@code images/}, see {@link LocalImages}) under the sandbox's own upper
 * directory; nothing of the host's {@code /usr} or {@code /etc} is visible. Its execs cannot rely on anything in
 * the image, so the helpers that enter it come from {@code tools/}, bound read-only at {@code /.chalk} and run
 * through the host's loader (see {@link SandboxTools}); its init is the host's static busybox. The image's Env,
 * WorkingDir, Entrypoint and Cmd apply; images that run as another user than root are refused.
 *
 * <p>Sandbox state lives under the runtime's state directory ({@code sandboxes/<id>/root} is a sandbox's
 * writable layer, or an image sandbox's mounted root with {@code upper} beside it) and in cgroups under
 * {@code <the server's cgroup>/chalk-compute/<key>/<id>}, where {@code key} is derived from the state directory.
 * Sandboxes die with the server (their init is killed when its parent dies), so {@link #reconcile} re-adopts
 * nothing and only removes what they left behind, unmounting image roots first.
 */
public final class LocalRuntime implements SandboxRuntime {

    private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);

    /** The PATH every sandbox process starts with. */
    public static final String DEFAULT_PATH = HostTools.DEFAULT_PATH;
    /** The most sandboxes {@link Builder#poolSize} keeps ready per spec. */
    public static final int MAX_POOL_SIZE = 16;
    /** How long {@link #close()} lets a sandbox's processes react to SIGTERM. */
    static final Duration CLOSE_GRACE = Duration.ofSeconds(2);

    /** The isolation mechanism in force. */
    enum Level {
        BUBBLEWRAP("bubblewrap"),
        UNSHARE("unshare"),
        NONE("none");

        final String label;

        Level(String label) {
            this.label = label;
        }

        boolean isolated() {
            return this != NONE;
        }
    }

    private final Path stateDir;
    private final Level level;
    private final HostTools tools;
    private final CgroupDriver cgroups;
    private final SandboxFiles.SystemView systemView;
    private final EtcMasks etcMasks = new EtcMasks(Path.of("/etc"));
    private final ProcMasks procMasks = ProcMasks.ofHost();
    private final SandboxDefaults defaults;
    private final CompletableFuture<SandboxFilter> syscallFilter;
    private final NetworkAccess network;
    /** The egress proxy of sandboxes with a network policy, started with the first one. */
    private final EgressAccess egress;
    /** Removes the sandboxes' leftovers right after this server is killed (null when it could not start). */
    private final WhenServerDies cleanupAfterServer;
    /** Each sandbox's own user namespace and id range. */
    private final UserNamespacePool userNamespaces;

    private final Isolation isolation;
    private final String key;
    private final StateDirLock lock;
    /** How long a create waits for a place the pool holds for a sandbox still starting. */
    private static final long POOL_PLACE_WAIT_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(10);

    private final RunningSandboxes sandboxes;
    private final SandboxTools sandboxTools;
    private final RuntimeImages images;
    private final ExecutorService helpers;
    private final InitSpawner spawner;
    private final ScheduledExecutorService scheduler;
    private final SandboxPool pool;
    private final Duration spareExecsIdle;
    /**
     * Whether the sandboxes directory is a mount of its own, so that an init's start can detach the other sandboxes'
     * layers from its copy of the mount table (see {@link SandboxCommands#OWN_MOUNT_TABLE}).
     */
    private final boolean sandboxesMount;

    private volatile boolean closed;

    /**
     * Creates the runtime and probes the host's isolation tools once.
     *
     * @param stateDir a directory owned by this runtime, for sandboxes' writable layers; created if missing
     * @param mode     how much isolation to insist on
     * @throws IllegalStateException when {@code mode} is {@link LocalIsolation#REQUIRED} and no isolation tool
     *                               works here, or when another runtime uses {@code stateDir}
     */
    public LocalRuntime(Path stateDir, LocalIsolation mode) {
        this(builder(stateDir).isolation(mode));
    }

    /** As the public constructor, looking for the isolation tools on {@code toolPath} instead of the server's PATH. */
    LocalRuntime(Path stateDir, LocalIsolation mode, String toolPath) {
        this(builder(stateDir).isolation(mode).toolPath(toolPath));
    }

    /** As above; without {@code useCgroups} the runtime behaves as on a host whose cgroups it cannot use. */
    LocalRuntime(Path stateDir, LocalIsolation mode, String toolPath, boolean useCgroups) {
        this(builder(stateDir).isolation(mode).toolPath(toolPath).useCgroups(useCgroups));
    }

    /** Settings of a local runtime; {@link #build()} creates it. */
    public static final class Builder {
        private final Path stateDir;
        private LocalIsolation isolation = LocalIsolation.AUTO;
        private String toolPath = Objects.requireNonNullElse(System.getenv("PATH"), DEFAULT_PATH);
        private Function<String, CgroupDriver> cgroups = CgroupDriver::detect;
        private Path ociImportDir;
        private String dockerHost;
        private String defaultImage;
        private SandboxDefaults defaults = SandboxDefaults.STANDARD;
        private EgressOptions egress = EgressOptions.DEFAULTS;
        private int poolSize;
        private Duration spareExecsIdle = SpareExecs.IDLE;
        private boolean userNamespaces = true;

        private Builder(Path stateDir) {
            this.stateDir = Objects.requireNonNull(stateDir, "stateDir");
        }

        /** How much isolation to insist on; default {@link LocalIsolation#AUTO}. */
        public Builder isolation(LocalIsolation isolation) {
            this.isolation = Objects.requireNonNull(isolation, "isolation");
            return this;
        }

        /**
         * Where {@code oci:NAME[:TAG]} (an OCI image layout directory) and {@code oci-archive:NAME[:TAG]} (a tar of
         * one) images are looked up; default {@code <stateDir>/oci}.
         */
        public Builder ociImportDir(Path dir) {
            this.ociImportDir = dir;
            return this;
        }

        /** The Docker engine images are exported from; default {@code DOCKER_HOST}, else the local socket. */
        public Builder dockerHost(String host) {
            this.dockerHost = host;
            return this;
        }

        /** The image of sandboxes created without one; default none (the host's read-only system view). */
        public Builder defaultImage(String image) {
            this.defaultImage = image;
            return this;
        }

        /** Limits of sandboxes that set none, and how many may run at once; default {@link SandboxDefaults#STANDARD}. */
        public Builder defaults(SandboxDefaults defaults) {
            this.defaults = Objects.requireNonNull(defaults, "defaults");
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

        /**
         * How many sandboxes to keep started ahead of time for each recently created spec, so that a create of the
         * same spec is a hand-over (see {@link SandboxPool}); default 0, none. At most {@link #MAX_POOL_SIZE}.
         */
        public Builder poolSize(int perSpec) {
            if (perSpec < 0 || perSpec > MAX_POOL_SIZE) {
                throw new IllegalArgumentException(
                        "the sandbox pool size must be between 0 and " + MAX_POOL_SIZE + ", not " + perSpec);
            }
            this.poolSize = perSpec;
            return this;
        }

        /**
         * How long a sandbox's spare exec helpers wait for an exec before they are let go of; default
         * {@link SpareExecs#IDLE}.
         */
        Builder spareExecsIdle(Duration idle) {
            this.spareExecsIdle = idle;
            return this;
        }

        Builder toolPath(String toolPath) {
            this.toolPath = toolPath;
            return this;
        }

        Builder useCgroups(boolean useCgroups) {
            this.cgroups =
                    useCgroups ? CgroupDriver::detect : key -> CgroupDriver.unavailable("cgroups are switched off");
            return this;
        }

        /**
         * Without user namespaces the runtime behaves as on a host that cannot give each sandbox ids of its own (a
         * kernel before 6.3): sandbox root is host root without capabilities.
         */
        Builder userNamespaces(boolean userNamespaces) {
            this.userNamespaces = userNamespaces;
            return this;
        }

        /** The cgroups of sandboxes, from the runtime's key; default what this host offers ({@code detect}). */
        Builder cgroups(Function<String, CgroupDriver> cgroups) {
            this.cgroups = cgroups;
            return this;
        }

        /**
         * Creates the runtime and probes the host's isolation tools once.
         *
         * @throws IllegalStateException when isolation is {@link LocalIsolation#REQUIRED} and no isolation tool
         *                               works here, or when another runtime uses the state directory
         */
        public LocalRuntime build() {
            return new LocalRuntime(this);
        }
    }

    /** @param stateDir a directory owned by the runtime (sandboxes' layers, the image cache); created if missing */
    public static Builder builder(Path stateDir) {
        return new Builder(stateDir);
    }

    private LocalRuntime(Builder b) {
        this.defaults = b.defaults;
        this.sandboxes = new RunningSandboxes(defaults.maxSandboxes());
        Path stateDir = b.stateDir;
        LocalIsolation mode = b.isolation;
        String toolPath = b.toolPath;
        try {
            Files.createDirectories(stateDir);
            this.stateDir = stateDir.toRealPath();
            Files.createDirectories(this.stateDir.resolve("sandboxes"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the local runtime's state directory " + stateDir, e);
        }
        this.helpers = Executors.newCachedThreadPool(DaemonThreads.numbered("chalk-local"));
        this.lock = StateDirLock.acquire(this.stateDir, "local runtime");
        try {
            this.systemView = SandboxFiles.hostSystemView(etcMasks);
            List<Path> visible =
                    systemView.readOnlyDirs().stream().map(Path::of).toList();
            this.tools = HostTools.find(toolPath, visible);
            this.key = StateDirKey.of(this.stateDir);
            this.cgroups = b.cgroups.apply(key);
            List<String> failures = new ArrayList<>();
            this.level = IsolationProbe.choose(tools, mode, failures);
            if (!level.isolated()) {
                this.userNamespaces = UserNamespacePool.none("this server runs sandboxes without isolation");
            } else if (!b.userNamespaces) {
                this.userNamespaces = UserNamespacePool.none("user namespaces are switched off");
            } else {
                this.userNamespaces = UserNamespacePool.start(
                        this.stateDir,
                        new UserNamespace.HolderTools(tools.require("setpriv"), tools.require("unshare")),
                        helpers);
            }
            if (level.isolated() && !SandboxPipes.works()) { // read now: the calls ready before a first exec
                log.info("Commands in sandboxes cannot open their own standard streams by name (/dev/stdout): this"
                        + " kernel cannot take a process's descriptors (pidfd_getfd, Linux 5.6)");
            }
            this.isolation =
                    IsolationProbe.describe(level, failures, tools, systemView, cgroups, userNamespaces.problem());
            // leftover sandboxes' roots are unmounted before the cache below them is touched
            OverlayMount.unmountAllUnder(sandboxesDir());
            this.sandboxesMount = level.isolated() && bindSandboxes();
            if (level.isolated() && cgroups.has("memory")) {
                // without a memory limit, the host's table is the only bound on a sandbox's open files
                FileTable.leaveToMemoryLimits();
            }
            this.sandboxTools = SandboxTools.prepare(this.stateDir.resolve("tools"), tools);
            this.images = new RuntimeImages(
                    this.stateDir,
                    level,
                    tools,
                    sandboxTools,
                    userNamespaces,
                    cgroups,
                    procMasks,
                    b.ociImportDir,
                    b.dockerHost,
                    b.defaultImage);
        } catch (IOException e) {
            lock.release();
            etcMasks.close();
            throw new UncheckedIOException("cannot set up the local runtime's image cache in " + this.stateDir, e);
        } catch (RuntimeException e) {
            lock.release();
            etcMasks.close();
            throw e;
        }
        this.spawner = new InitSpawner();
        this.scheduler = DaemonThreads.timer("chalk-local-timer");
        this.network = NetworkAccess.onThisHost(this.stateDir, spawner);
        this.egress = new EgressAccess(this.stateDir.resolve("egress"), b.egress);
        this.cleanupAfterServer =
                Leftovers.removeWhenServerDies(sandboxesDir(), images.workInProgress(), cgroups, tools);
        userNamespaces
                .problem()
                .filter(p -> level.isolated())
                .ifPresent(why -> log.warn(
                        "Sandbox root is HOST ROOT"
                                + " (without capabilities): sandboxes cannot get a user namespace of their own here: {}",
                        why));
        // built once, off the start-up path; a create waits for it
        Path filterDir = this.stateDir;
        this.syscallFilter = level.isolated()
                ? CompletableFuture.supplyAsync(() -> SandboxFilter.build(filterDir), helpers)
                : CompletableFuture.completedFuture(null);
        if (level == Level.NONE) {
            log.warn("SANDBOXES ARE NOT ISOLATED from this host or from each other: {}", isolation.detail());
        } else {
            log.info("Local runtime isolation: {} ({})", level.label, isolation.detail());
        }
        if (cgroups.problem().isPresent()) {
            log.warn("Local runtime cgroups degraded: {}", cgroups.problem().get());
        }
        this.pool = new SandboxPool(this, sandboxes, b.poolSize);
        this.spareExecsIdle = b.spareExecsIdle;
    }

    @Override
    public String name() {
        return "local";
    }

    @Override
    public Isolation isolation() {
        return isolation;
    }

    /** Sandboxes without an image see the host's system directories read-only (see {@link SandboxFiles}). */
    @Override
    public boolean sandboxesSeeHostSystem() {
        return true;
    }

    @Override
    public RuntimeSandbox start(SandboxSpec spec) throws RuntimeStartException {
        if (closed) {
            throw new RuntimeStartException("the local runtime is shut down");
        }
        LocalSandbox sandbox = pool.take(spec); // reserves the id when it hands one over
        if (sandbox == null) {
            reserve(spec.id());
            try {
                sandbox = LocalSandbox.start(this, spec);
            } finally {
                if (sandbox == null) {
                    sandboxes.abandon(spec.id());
                }
            }
        }
        sandboxes.add(sandbox);
        if (sandbox.onStopped().isDone()) {
            forget(sandbox); // it ended before it was registered, so its own forget found nothing
        }
        if (closed) {
            sandbox.terminate(Duration.ZERO);
            throw new RuntimeStartException("the local runtime is shut down");
        }
        return sandbox;
    }

    /**
     * Reserves a place for a sandbox of its own, taking one the pool holds when every place is taken. A place the pool
     * holds for a sandbox still starting is taken once that sandbox waits (the pool may start one for a spec a create
     * has just asked for, between the create's look at the pool and its reservation), within {@link
     * #POOL_PLACE_WAIT_NANOS}.
     */
    private void reserve(String id) throws RuntimeStartException {
        long deadline = System.nanoTime() + POOL_PLACE_WAIT_NANOS;
        while (true) {
            try {
                sandboxes.reserve(id);
                return;
            } catch (RuntimeStartException e) {
                if (!sandboxes.fullWithPooled()) {
                    throw e;
                }
                if (!pool.evictOne()) {
                    if (System.nanoTime() - deadline > 0) {
                        throw e;
                    }
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        throw e;
                    }
                }
            }
        }
    }

    /** Sandboxes started ahead of time and waiting for a create (none are listed: they are no one's yet). */
    @Override
    public int pooledSandboxes() {
        return pool.idle();
    }

    @Override
    public int maxSandboxes() {
        return defaults.maxSandboxes();
    }

    /**
     * Local sandboxes never survive the server (their init dies with it), so nothing is re-adopted; the writable
     * layers and cgroups they left behind are removed, together with anything still running in those cgroups.
     */
    @Override
    public Collection<RuntimeSandbox> reconcile(Collection<String> runningIds) {
        // a build step's group is no sandbox's, and not a leftover while the step runs
        Leftovers.remove(
                sandboxesDir(),
                cgroups,
                id -> sandboxes.claims(id) || images.builder().runsStep(id));
        return List.of();
    }

    /** Terminates every sandbox (SIGTERM, then SIGKILL after a short grace) and releases the state directory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        pool.close();
        List<LocalSandbox> all = sandboxes.all();
        List<java.util.concurrent.Future<?>> stops = new ArrayList<>();
        for (LocalSandbox s : all) {
            stops.add(helpers.submit(() -> s.terminate(CLOSE_GRACE)));
        }
        for (java.util.concurrent.Future<?> f : stops) {
            try {
                f.get();
            } catch (Exception e) {
                log.warn("Stopping a sandbox failed: {}", e.toString());
            }
        }
        if (sandboxesMount) {
            LayerQuota.unmount(sandboxesDir()); // no layer is left below it
        }
        images.builder().stopSteps(); // no build step outlives the runtime in its groups
        cgroups.removeBaseIfEmpty();
        egress.close();
        etcMasks.close();
        userNamespaces.close();
        if (cleanupAfterServer != null) {
            cleanupAfterServer.close();
        }
        images.close();
        // its build writes into the state directory: never after the runtime has let go of it
        syscallFilter.handle((f, e) -> null).join();
        helpers.shutdown();
        spawner.close();
        scheduler.shutdownNow();
        lock.release();
    }

    // ---- what sandboxes need from their runtime ----

    Level level() {
        return level;
    }

    HostTools tools() {
        return tools;
    }

    CgroupDriver cgroups() {
        return cgroups;
    }

    /**
     * The host's system view as it is now: a file under {@code /etc} made root-only after start-up must be masked in
     * the next sandbox, and one that vanished must not be (bubblewrap cannot mount over what is not there).
     */
    SandboxFiles.SystemView systemView() {
        return SandboxFiles.hostSystemView(etcMasks);
    }

    /**
     * The syscall filter sandboxes run under; isolated sandboxes do not start without one.
     *
     * @throws RuntimeStartException when it could not be built here (no libseccomp 2.5, another architecture)
     */
    SandboxFilter syscallFilter() throws RuntimeStartException {
        try {
            return syscallFilter.join();
        } catch (java.util.concurrent.CompletionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw new RuntimeStartException(
                    "sandboxes run under a syscall filter, which cannot be built here: " + cause.getMessage(), cause);
        }
    }

    /**
     * Gives the network namespace held by host process {@code pid} egress through slirp4netns, behind the rules that
     * keep the host and cloud metadata out of reach. slirp4netns runs in the sandbox's cgroups ({@code groups}, a
     * group of its own among the sandbox's execs) with the sandbox's open-file limit.
     *
     * @throws RuntimeStartException when this host lacks what that needs, or the set-up failed
     */
    Egress attachNetwork(Path sandboxDir, long pid, @Nullable SandboxCgroup groups) throws RuntimeStartException {
        List<Path> procs;
        try {
            procs = groups == null ? List.of() : groups.newExec().procsFiles();
        } catch (IOException e) {
            throw new RuntimeStartException("cannot make the cgroup of the sandbox's network: " + e.getMessage(), e);
        }
        return network.attach(sandboxDir, pid, command -> CgroupEntry.command(procs, defaults.openFiles(), command));
    }

    /** The egress proxy and links of sandboxes with a network policy. */
    EgressAccess egress() {
        return egress;
    }

    /** A user namespace for a new sandbox, with an id range of its own; empty when this host cannot give one. */
    Optional<UserNamespace> newUserNamespace() throws IOException {
        return userNamespaces.create();
    }

    /** Hands a gone sandbox's ids back. */
    void releaseIds(IdRange range) {
        userNamespaces.release(range);
    }

    /** Why sandboxes with network cannot be created here; empty when they can. */
    Optional<String> networkProblem() {
        return network.problem();
    }

    /** The resolver configuration bound into sandboxes with network. */
    Path resolvConf() {
        return network.resolvConf();
    }

    /** Limits of sandboxes that set none, and how many may run at once. */
    SandboxDefaults defaults() {
        return defaults;
    }

    /** What of {@code /proc} sandboxes do not see; the same for the life of the kernel. */
    ProcMasks procMasks() {
        return procMasks;
    }

    /**
     * Binds the sandboxes directory onto itself (see {@link #sandboxesMount}); false, logged, when that fails: inits
     * then start from the host's whole mount table, as costly as it is.
     */
    private boolean bindSandboxes() throws IOException {
        Files.createDirectories(stateDir.resolve(ASIDE));
        try {
            SandboxesMount.bind(sandboxesDir());
            return true;
        } catch (IOException e) {
            log.warn("Each running sandbox will make the next start slower: {}", e.getMessage());
            return false;
        }
    }

    /**
     * The words that start an init in a copy of the host's mount table without the other sandboxes' layers (see
     * {@link SandboxCommands#OWN_MOUNT_TABLE}); empty when that cannot be had here.
     *
     * @param dir the sandbox's directory, its layer's mount point
     */
    List<String> ownMountTable(Path dir) throws RuntimeStartException {
        Optional<Path> perl = tools.get("perl");
        if (!sandboxesMount || perl.isEmpty()) {
            return List.of();
        }
        return SandboxCommands.ownMountTable(
                perl.get(), syscallFilter().filter(), sandboxesDir(), dir, stateDir.resolve(ASIDE));
    }

    /** The empty directory a starting init moves its sandbox's directory aside to, in its own mount table. */
    private static final String ASIDE = "aside";

    Path sandboxesDir() {
        return stateDir.resolve("sandboxes");
    }

    Path stateDir() {
        return stateDir;
    }

    SandboxTools sandboxTools() {
        return sandboxTools;
    }

    Optional<String> defaultImage() {
        return images.defaultImage();
    }

    /**
     * The layers and configuration of image {@code ref}, unpacked into the cache if needed.
     *
     * @throws RuntimeStartException when sandboxes cannot run images here or the image cannot be had; the message
     *                               says what to do
     */
    LocalImage image(String ref) throws RuntimeStartException {
        return images.resolve(ref);
    }

    ExecutorService helpers() {
        return helpers;
    }

    ScheduledExecutorService scheduler() {
        return scheduler;
    }

    /** Starts a sandbox's init from the runtime's own spawner thread. */
    Process spawnInit(ProcessBuilder pb) throws IOException {
        return spawner.start(pb);
    }

    /** How long spare exec helpers wait for an exec before they are let go of. */
    Duration spareExecsIdle() {
        return spareExecsIdle;
    }

    SandboxPool pool() {
        return pool;
    }

    void forget(LocalSandbox sandbox) {
        sandboxes.forget(sandbox);
    }

    /** Builds image specs as cached layers on this host; see {@link LocalImageBuilder}. */
    @Override
    public ai.chalk.compute.server.image.ImageBuilder imageBuilder() {
        return images.builder();
    }
}
