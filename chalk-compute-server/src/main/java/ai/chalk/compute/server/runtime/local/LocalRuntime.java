package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.host.StateDirKey;
import ai.chalk.compute.server.runtime.host.StateDirLock;
import ai.chalk.compute.server.runtime.host.WhenServerDies;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupDriver;
import ai.chalk.compute.server.runtime.local.image.BuildTools;
import ai.chalk.compute.server.runtime.local.image.ImageSourceException;
import ai.chalk.compute.server.runtime.local.image.LocalImage;
import ai.chalk.compute.server.runtime.local.image.LocalImageBuilder;
import ai.chalk.compute.server.runtime.local.image.LocalImages;
import ai.chalk.compute.server.runtime.local.image.OverlayMount;
import ai.chalk.compute.server.runtime.network.Egress;
import ai.chalk.compute.server.runtime.network.SandboxNetwork;
import ai.chalk.compute.server.runtime.seccomp.SyscallFilter;
import ai.chalk.compute.server.runtime.userns.IdRange;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import ai.chalk.compute.server.runtime.userns.UserNamespacePool;
import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Function;
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
    /** How long {@link #close()} lets a sandbox's processes react to SIGTERM. */
    static final Duration CLOSE_GRACE = Duration.ofSeconds(2);

    /** The isolation mechanism in force. */
    enum Level {
        BUBBLEWRAP("bubblewrap"), UNSHARE("unshare"), NONE("none");

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
    private final ProcMasks procMasks = ProcMasks.ofHost();
    private final SandboxDefaults defaults;
    private final CompletableFuture<SandboxFilter> syscallFilter;
    /** Egress of sandboxes with network, or why they cannot have any here. */
    private final SandboxNetwork network;
    private final String networkProblem;
    private final Path resolvConf;
    /** Removes the sandboxes' leftovers right after this server is killed (null when it could not start). */
    private final WhenServerDies cleanupAfterServer;
    /** Each sandbox's own user namespace and id range. */
    private final UserNamespacePool userNamespaces;
    private final Isolation isolation;
    private final String key;
    private final StateDirLock lock;
    private final ConcurrentMap<String, LocalSandbox> sandboxes = new ConcurrentHashMap<>();
    /** Ids of the sandboxes being started, reserved (guarded by {@link #sandboxes}). */
    private final Set<String> starting = new HashSet<>();
    private final SandboxTools sandboxTools;
    private final LocalImages images;
    private final Optional<String> defaultImage;
    private final LocalImageBuilder imageBuilder;
    private final ExecutorService helpers;
    private final ExecutorService spawner;
    private final ScheduledExecutorService scheduler;
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

        Builder toolPath(String toolPath) {
            this.toolPath = toolPath;
            return this;
        }

        Builder useCgroups(boolean useCgroups) {
            this.cgroups = useCgroups ? CgroupDriver::detect
                    : key -> CgroupDriver.unavailable("cgroups are switched off");
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
            this.systemView = SandboxFiles.hostSystemView();
            List<Path> visible = systemView.readOnlyDirs().stream().map(Path::of).toList();
            this.tools = HostTools.find(toolPath, visible);
            this.key = StateDirKey.of(this.stateDir);
            this.cgroups = b.cgroups.apply(key);
            List<String> failures = new ArrayList<>();
            this.level = IsolationProbe.choose(tools, mode, failures);
            this.userNamespaces = level.isolated() ? UserNamespacePool.start(this.stateDir, tools.require("unshare"),
                    helpers) : UserNamespacePool.none("this server runs sandboxes without isolation");
            this.isolation = IsolationProbe.describe(level, failures, tools, systemView, cgroups,
                    userNamespaces.problem());
            // leftover sandboxes' roots are unmounted before the cache below them is touched
            OverlayMount.unmountAllUnder(sandboxesDir());
            this.sandboxTools = SandboxTools.prepare(this.stateDir.resolve("tools"), tools);
            this.images = new LocalImages(this.stateDir.resolve("images"),
                    b.ociImportDir != null ? b.ociImportDir : this.stateDir.resolve("oci"), b.dockerHost);
            this.defaultImage = Optional.ofNullable(b.defaultImage).filter(i -> !i.isBlank());
            this.imageBuilder = new LocalImageBuilder(images, this.stateDir, buildTools(), buildProblem());
        } catch (IOException e) {
            lock.release();
            throw new UncheckedIOException("cannot set up the local runtime's image cache in " + this.stateDir, e);
        } catch (RuntimeException e) {
            lock.release();
            throw e;
        }
        // sandbox inits die with the thread that spawned them (PR_SET_PDEATHSIG follows the parent *thread*), so
        // they are spawned by a thread that lives exactly as long as this runtime
        this.spawner = Executors.newSingleThreadExecutor(DaemonThreads.named("chalk-local-spawner"));
        this.scheduler = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("chalk-local-timer"));
        SandboxNetwork net = null;
        String netProblem = null;
        try {
            net = SandboxNetwork.onThisHost(this::spawnInit);
        } catch (RuntimeStartException e) {
            netProblem = e.getMessage();
        }
        this.network = net;
        this.networkProblem = netProblem;
        this.resolvConf = this.stateDir.resolve("resolv.conf");
        try {
            Files.writeString(resolvConf, SandboxNetwork.resolvConf());
            Files.setPosixFilePermissions(resolvConf, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + resolvConf, e);
        }
        WhenServerDies cleanup = null;
        try {
            List<String> args = new ArrayList<>(List.of(sandboxesDir().toString()));
            cgroups.baseDirs().forEach(d -> args.add(d.toString()));
            cleanup = WhenServerDies.start("chalk-sandbox-cleanup", SANDBOX_CLEANUP, args, tools.get("setsid"));
        } catch (IOException e) {
            log.warn("A killed server's sandboxes will be cleaned up only at its next start: {}", e.toString());
        }
        this.cleanupAfterServer = cleanup;
        userNamespaces.problem().filter(p -> level.isolated()).ifPresent(why -> log.warn("Sandbox root is HOST ROOT"
                + " (without capabilities): sandboxes cannot get a user namespace of their own here: {}", why));
        // about a second on a cold JVM (JNA, libseccomp): built once, off the start-up path; a create waits for it
        this.syscallFilter = level.isolated() ? CompletableFuture.supplyAsync(this::buildSyscallFilter, helpers)
                : CompletableFuture.completedFuture(null);
        if (level == Level.NONE) {
            log.warn("SANDBOXES ARE NOT ISOLATED from this host or from each other: {}", isolation.detail());
        } else {
            log.info("Local runtime isolation: {} ({})", level.label, isolation.detail());
        }
        if (cgroups.problem().isPresent()) {
            log.warn("Local runtime cgroups degraded: {}", cgroups.problem().get());
        }
    }

    private Optional<BuildTools> buildTools() {
        if (level != Level.BUBBLEWRAP || sandboxTools.problem().isPresent()) {
            return Optional.empty();
        }
        return Optional.of(new BuildTools(tools.require("bwrap"), sandboxTools.dir(), SandboxTools.MOUNT,
                sandboxTools.command("setpriv"),
                sandboxTools.has("nsenter") ? sandboxTools.command("nsenter") : List.of(), userNamespaces));
    }

    private String buildProblem() {
        if (level != Level.BUBBLEWRAP) {
            return "image builds run in bubblewrap, and this server's isolation is " + level.label
                    + (level == Level.NONE ? "" : " (bubblewrap is missing or does not work here)");
        }
        return sandboxTools.problem().orElse(null);
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
        synchronized (sandboxes) { // the count and the reservation as one step, or two creates pass one free place
            if (sandboxes.size() + starting.size() >= defaults.maxSandboxes()) {
                throw new RuntimeStartException("this server runs at most " + defaults.maxSandboxes() + " sandboxes at"
                        + " once and all are in use: terminate one first, or start the server with a higher limit");
            }
            if (sandboxes.containsKey(spec.id()) || !starting.add(spec.id())) {
                throw new RuntimeStartException("a sandbox with id " + spec.id() + " is already running");
            }
        }
        LocalSandbox sandbox;
        try {
            sandbox = LocalSandbox.start(this, spec);
        } finally {
            synchronized (sandboxes) {
                starting.remove(spec.id());
            }
        }
        synchronized (sandboxes) {
            sandboxes.put(spec.id(), sandbox);
        }
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
     * Local sandboxes never survive the server (their init dies with it), so nothing is re-adopted; the writable
     * layers and cgroups they left behind are removed, together with anything still running in those cgroups.
     */
    @Override
    public Collection<RuntimeSandbox> reconcile(Collection<String> runningIds) {
        List<String> leftovers = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(sandboxesDir())) {
            for (Path d : dirs) {
                leftovers.add(d.getFileName().toString());
            }
        } catch (IOException e) {
            log.warn("Cannot list leftover sandboxes in {}: {}", sandboxesDir(), e.toString());
        }
        for (String id : cgroups.leftoverIds()) {
            if (!leftovers.contains(id)) {
                leftovers.add(id);
            }
        }
        for (String id : leftovers) {
            synchronized (sandboxes) {
                if (sandboxes.containsKey(id) || starting.contains(id)) {
                    continue;
                }
            }
            cgroups.removeSandbox(id);
            OverlayMount.unmountAllUnder(sandboxesDir().resolve(id)); // an image sandbox's root, never deleted through
            try {
                NoFollowDelete.delete(sandboxesDir().resolve(id));
            } catch (IOException e) {
                log.warn("Cannot remove the leftover layer of sandbox {}: {}", id, e.toString());
            }
            log.info("Removed leftovers of sandbox {}", id);
        }
        return List.of();
    }

    /** Terminates every sandbox (SIGTERM, then SIGKILL after a short grace) and releases the state directory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<LocalSandbox> all = new ArrayList<>(sandboxes.values());
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
        cgroups.removeBaseIfEmpty();
        userNamespaces.close();
        if (cleanupAfterServer != null) {
            cleanupAfterServer.close();
        }
        images.close();
        // its build writes into the state directory: never after the runtime has let go of it
        syscallFilter.handle((f, e) -> null).join();
        helpers.shutdown();
        spawner.shutdown();
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
        return SandboxFiles.hostSystemView();
    }

    /**
     * The compiled syscall filter of every sandbox process, the file bubblewrap reads it from, and the file of the
     * inits' filter (which lets them join their user namespace, see {@link SyscallFilter#forSandboxInits}).
     */
    record SandboxFilter(SyscallFilter filter, Path file, Path initFile) {
    }

    private SandboxFilter buildSyscallFilter() {
        try {
            SyscallFilter f = SyscallFilter.forSandboxes();
            SandboxFilter built = new SandboxFilter(f, f.writeTo(stateDir),
                    SyscallFilter.forSandboxInits().writeTo(stateDir, "seccomp-init.bpf"));
            log.debug("Sandbox syscall filter: {}", f);
            return built;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the sandbox syscall filter into " + stateDir, e);
        }
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
            throw new RuntimeStartException("sandboxes run under a syscall filter, which cannot be built here: "
                    + cause.getMessage(), cause);
        }
    }

    /**
     * Gives the network namespace held by host process {@code pid} egress through slirp4netns, behind the rules that
     * keep the host and cloud metadata out of reach.
     *
     * @throws RuntimeStartException when this host lacks what that needs, or the set-up failed
     */
    Egress attachNetwork(Path sandboxDir, long pid) throws RuntimeStartException {
        if (network == null) {
            throw new RuntimeStartException(networkProblem);
        }
        try {
            return network.attach(sandboxDir, pid);
        } catch (IOException e) {
            throw new RuntimeStartException("cannot give the sandbox its network: " + e.getMessage(), e);
        }
    }

    /** Whether sandboxes with network can be created here; else why not. */
    /**
     * What removes a killed server's sandboxes (see {@link WhenServerDies}): it thaws and kills whatever is left in
     * their groups (their inits die with the server, but a frozen process cannot die until thawed), detaches their
     * file systems (layers, id-mapped views, image roots) and removes their directories and cgroups. It acts only on
     * the sandboxes there were when the server died, so a new server started on the same directory meanwhile loses
     * nothing. Arguments: the sandboxes directory, then the base directory of each cgroup hierarchy.
     */
    static final String SANDBOX_CLEANUP = """
            S=$1; shift
            cd "$S" || exit 0
            ids=$(ls -A)
            for g in "$@"; do
              for id in $ids; do
                [ -f "$g/$id/freezer.state" ] && echo THAWED > "$g/$id/freezer.state"
                [ -f "$g/$id/cgroup.freeze" ] && echo 0 > "$g/$id/cgroup.freeze"
                [ -f "$g/$id/cgroup.kill" ] && echo 1 > "$g/$id/cgroup.kill"
                find "$g/$id" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do kill -9 "$p"; done
              done
            done 2>/dev/null
            sleep 1
            for id in $ids; do
              umount -l "$S/$id" 2>/dev/null
              rm -rf --one-file-system "$S/$id"
              for g in "$@"; do
                [ -d "$g/$id" ] && find "$g/$id" -depth -type d -exec rmdir {} \\; 2>/dev/null
              done
            done
            for g in "$@"; do rmdir "$g" 2>/dev/null; done
            exit 0
            """;

    /** A user namespace for a new sandbox, with an id range of its own; empty when this host cannot give one. */
    Optional<UserNamespace> newUserNamespace() throws IOException {
        return userNamespaces.create();
    }

    /** Hands a gone sandbox's ids back. */
    void releaseIds(IdRange range) {
        userNamespaces.release(range);
    }

    Optional<String> networkProblem() {
        return Optional.ofNullable(networkProblem);
    }

    /** The resolver configuration bound into sandboxes with network. */
    Path resolvConf() {
        return resolvConf;
    }

    /** Limits of sandboxes that set none, and how many may run at once. */
    SandboxDefaults defaults() {
        return defaults;
    }

    /** What of {@code /proc} sandboxes do not see; the same for the life of the kernel. */
    ProcMasks procMasks() {
        return procMasks;
    }

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
        return defaultImage;
    }

    /**
     * The layers and configuration of image {@code ref}, unpacked into the cache if needed.
     *
     * @throws RuntimeStartException when sandboxes cannot run images here or the image cannot be had; the message
     *                               says what to do
     */
    LocalImage image(String ref) throws RuntimeStartException {
        if (level == Level.NONE) {
            throw new RuntimeStartException("image " + ref + ": this server runs sandboxes as plain processes"
                    + " (isolation none), which cannot have their own root filesystem; install bubblewrap and use"
                    + " isolation auto, or create the sandbox without an image");
        }
        if (sandboxTools.problem().isPresent()) {
            throw new RuntimeStartException("image " + ref + ": " + sandboxTools.problem().get());
        }
        try {
            return images.resolve(ref);
        } catch (ImageSourceException e) {
            throw new RuntimeStartException(e.getMessage(), e);
        } catch (IOException e) {
            throw new RuntimeStartException("cannot unpack image " + ref + ": " + e.getMessage(), e);
        }
    }

    ExecutorService helpers() {
        return helpers;
    }

    ScheduledExecutorService scheduler() {
        return scheduler;
    }

    /** Starts a sandbox's init from the runtime's own spawner thread. */
    Process spawnInit(ProcessBuilder pb) throws IOException {
        try {
            return spawner.submit(pb::start).get();
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IOException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting a sandbox", e);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            throw new IOException("the local runtime is shut down", e);
        }
    }

    void forget(LocalSandbox sandbox) {
        sandboxes.remove(sandbox.id(), sandbox);
    }

    /** Builds image specs as cached layers on this host; see {@link LocalImageBuilder}. */
    @Override
    public ai.chalk.compute.server.image.ImageBuilder imageBuilder() {
        return imageBuilder;
    }
}
