package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.runtime.ProcessSpecCheck;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxRuntime;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import ai.chalk.compute.server.runtime.host.StateDirKey;
import ai.chalk.compute.server.runtime.host.StateDirLock;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.CreateContainerResponse;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.command.InspectExecResponse;
import com.github.dockerjava.api.command.TopContainerResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.AccessMode;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.PullResponseItem;
import com.github.dockerjava.api.model.Volume;
import com.github.dockerjava.api.model.WaitResponse;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
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
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes as containers of a Docker Engine (Docker, Podman and Colima speak its API), through docker-java.
 *
 * <p><b>A sandbox</b> is a container of {@link SandboxSpec#image()} (or the runtime's default image) whose pid 1 is
 * a shell loop that stays up and reaps orphans ({@link Scripts#INIT}; the image needs {@code /bin/sh} and
 * {@code sleep}). It is labelled {@value #LABEL_SANDBOX}{@code =<id>} and {@value #LABEL_SERVER}{@code =<key>}, the
 * key derived from this runtime's state directory, so that {@link #reconcile} finds the containers of this server
 * after a restart: those still running and still wanted are adopted (cleared of what execs cut by the restart left
 * running), the rest removed. Settings: network mode {@code none} (loopback only) unless the spec grants the network
 * (then {@link NetworkFence#SANDBOXES}); {@code NanoCpus} and {@code Memory} (swap included, so no swap) from the
 * limits; at most {@value #PIDS_MAX} processes; capabilities
 * dropped but for {@link #KEPT_CAPABILITIES} (what package managers and file ownership need; no raw sockets, mknod,
 * chroot or capability changes); {@code no-new-privileges}; the spec's env; the image's WORKDIR when it declares one,
 * else the spec's workdir (created by the engine);
 * volumes as bind mounts, {@code nosuid,nodev} ({@link VolumeMounts}); the entrypoint as a first exec whose output
 * goes to the log; with a lifetime, an init that ends the container after it ({@link Scripts#INIT}).
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
    /** How many processes (and threads) one sandbox may have at once. */
    static final long PIDS_MAX = 4096;
    /** Capabilities a sandbox keeps; every other one is dropped. */
    static final List<Capability> KEPT_CAPABILITIES = List.of(Capability.CHOWN, Capability.DAC_OVERRIDE,
            Capability.FOWNER, Capability.FSETID, Capability.KILL, Capability.SETGID, Capability.SETUID,
            Capability.NET_BIND_SERVICE);
    /**
     * How long after its lifetime a container ends itself: the server's timer (a graceful terminate) comes first
     * while the server lives.
     */
    static final Duration LIFETIME_MARGIN = Duration.ofSeconds(30);
    /** How long {@link #close()} lets a sandbox's processes react to SIGTERM. */
    static final Duration CLOSE_GRACE = Duration.ofSeconds(2);
    private static final Duration PING_TIMEOUT = Duration.ofSeconds(5);
    private static final long WATCH_MILLIS = 50;
    private static final Pattern SAFE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final Pattern MESSAGE = Pattern.compile("\"message\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

    private final Path stateDir;
    private final String key;
    private final String host;
    private final EngineConnection.Address address;
    private final String defaultImage;
    private final boolean useHost;
    private final DockerClient client;
    private final String engineVersion;
    private final Isolation isolation;
    private final StateDirLock lock;
    private final ConcurrentMap<String, DockerSandbox> sandboxes = new ConcurrentHashMap<>();
    private final Set<DockerProcess> watched = ConcurrentHashMap.newKeySet();
    private final ExecutorService helpers;
    private final ScheduledExecutorService scheduler;
    private final ContainerFiles files;
    private final DockerImageBuilder imageBuilder;
    private final NetworkFence fence;
    private final VolumeMounts volumes;
    private final Duration lifetimeMargin;
    private volatile boolean closed;

    /** Settings of a {@link DockerRuntime}. */
    public static final class Builder {
        private final Path stateDir;
        private String dockerHost;
        private String defaultImage = DEFAULT_IMAGE;
        private boolean useHost = true;
        private Duration lifetimeMargin = LIFETIME_MARGIN;

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
    }

    /** @param stateDir a directory owned by this runtime; its path keys the containers it owns */
    public static Builder builder(Path stateDir) {
        return new Builder(stateDir);
    }

    private DockerRuntime(Builder b) {
        this.host = resolveHost(b.dockerHost);
        this.defaultImage = b.defaultImage;
        this.useHost = b.useHost;
        this.lifetimeMargin = b.lifetimeMargin;
        DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
                .withDockerHost(host).build();
        SSLContext tls = null;
        if (config.getSSLConfig() != null) {
            try {
                tls = config.getSSLConfig().getSSLContext();
            } catch (Exception e) {
                throw new IllegalStateException("cannot set up TLS for the Docker engine at " + host + ": "
                        + e.getMessage(), e);
            }
        }
        this.address = new EngineConnection.Address(URI.create(host), tls);
        String problem = ping(address, PING_TIMEOUT);
        if (problem != null) {
            throw new IllegalStateException("no Docker engine at " + host + ": start dockerd or use --runtime local ("
                    + problem + ")");
        }
        try {
            Files.createDirectories(b.stateDir);
            this.stateDir = b.stateDir.toRealPath();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the docker runtime's state directory " + b.stateDir, e);
        }
        this.lock = StateDirLock.acquire(stateDir, "docker runtime");
        this.key = StateDirKey.of(stateDir);
        ApacheDockerHttpClient http = new ApacheDockerHttpClient.Builder()
                .dockerHost(config.getDockerHost())
                .sslConfig(config.getSSLConfig())
                .maxConnections(4096)
                .connectionTimeout(Duration.ofSeconds(10))
                .build();
        this.client = DockerClientImpl.getInstance(config, http);
        String version;
        try {
            version = client.versionCmd().exec().getVersion();
        } catch (RuntimeException e) {
            closeQuietly(client);
            lock.release();
            throw new IllegalStateException("no Docker engine at " + host + ": start dockerd or use --runtime local ("
                    + engineMessage(e) + ")", e);
        }
        this.engineVersion = version;
        boolean remapped = rootIsRemapped(client);
        AtomicInteger threads = new AtomicInteger();
        this.helpers = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "chalk-docker-" + threads.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "chalk-docker-timer");
            t.setDaemon(true);
            return t;
        });
        scheduler.scheduleWithFixedDelay(this::watchExits, WATCH_MILLIS, WATCH_MILLIS, TimeUnit.MILLISECONDS);
        this.files = new ContainerFiles(client, helpers);
        boolean unixSocket = URI.create(host).getScheme() != null && URI.create(host).getScheme().equals("unix");
        this.fence = new NetworkFence(client, useHost && unixSocket);
        try {
            fence.createNetworks();
        } catch (RuntimeException e) {
            disconnect();
            throw e;
        }
        String fenceProblem = fence.install();
        this.volumes = VolumeMounts.under(stateDir, useHost && unixSocket);
        this.imageBuilder = new DockerImageBuilder(client, http, fence, helpers, buildShell(stateDir, client));
        this.isolation = new Isolation("container", "Docker Engine " + engineVersion + " at " + host
                + ": each sandbox is a container with its own pid, mount, network (loopback only unless its network"
                + " policy grants the network: then the " + NetworkFence.SANDBOXES + " bridge, where sandboxes cannot"
                + " reach each other" + (fenceProblem == null ? ", the host's addresses or link-local ones"
                : " (but may reach the host's addresses: " + fenceProblem + ")") + "), ipc and uts namespaces and a"
                + " writable layer removed at terminate; capabilities limited to "
                + KEPT_CAPABILITIES.stream().map(Enum::name).toList()
                + ", no-new-privileges, Docker's default seccomp profile; volumes mounted "
                + (volumes.problem() == null ? "nosuid,nodev" : "as they are (not nosuid,nodev: " + volumes.problem()
                + ")") + "; cpu, memory (no swap) and " + PIDS_MAX + " processes at most by the engine's cgroups;"
                + " a container given a lifetime ends itself after it, server or not; container root is "
                + (remapped ? "an unprivileged id of the host (the engine remaps user namespaces)"
                : "the host's root without capabilities (the engine does not remap user namespaces: dockerd"
                + " --userns-remap=default would)"), true);
        log.info("Docker runtime: engine {} at {}, default image {}", engineVersion, host, defaultImage);
    }

    /**
     * The shell of image build steps (see {@link BuildShell}): the host's helpers, when the engine runs binaries of this
     * host's architecture.
     */
    private static Optional<BuildShell> buildShell(Path stateDir, DockerClient client) {
        try {
            String engine = client.versionCmd().exec().getArch();
            String host = System.getProperty("os.arch");
            boolean same = engine != null && (engine.equals(host) || engine.equals("amd64") && host.equals("x86_64")
                    || engine.equals("x86_64") && host.equals("amd64") || engine.equals("arm64") && host.equals("aarch64"));
            if (!same) {
                log.warn("Image build steps keep Docker's default capabilities: the engine runs {} binaries, this"
                        + " host is {}", engine, host);
                return Optional.empty();
            }
        } catch (RuntimeException e) {
            return Optional.empty();
        }
        SandboxTools tools = SandboxTools.forImages(stateDir.resolve("build-tools"));
        tools.problem().ifPresent(p -> log.warn("Image build steps keep Docker's default capabilities: {}", p));
        return BuildShell.of(tools);
    }

    /** Whether the engine runs containers in a remapped user namespace ({@code dockerd --userns-remap}). */
    private static boolean rootIsRemapped(DockerClient client) {
        try {
            List<String> options = client.infoCmd().exec().getSecurityOptions();
            return options != null && options.stream().anyMatch(o -> o.startsWith("name=userns"));
        } catch (RuntimeException e) {
            return false;
        }
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
        String h = resolveHost(dockerHost);
        SSLContext tls = null;
        if (!h.startsWith("unix:")) {
            try {
                DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
                        .withDockerHost(h).build();
                tls = config.getSSLConfig() == null ? null : config.getSSLConfig().getSSLContext();
            } catch (Exception e) {
                return false;
            }
        }
        try {
            return ping(new EngineConnection.Address(URI.create(h), tls), timeout) == null;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** Null when the engine answered, else why not. */
    private static String ping(EngineConnection.Address address, Duration timeout) {
        if (address.uri().getScheme() != null && address.uri().getScheme().equals("unix")
                && !Files.exists(Path.of(address.uri().getPath()))) {
            return address.uri().getPath() + " does not exist";
        }
        CompletableFuture<String> answer = CompletableFuture.supplyAsync(() -> {
            try {
                EngineConnection.ping(address);
                return null;
            } catch (IOException e) {
                return e.getMessage() == null ? e.toString() : e.getMessage();
            }
        });
        try {
            return answer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            answer.cancel(true);
            return "no answer within " + timeout.toSeconds() + " s";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } catch (ExecutionException e) {
            return e.getCause().toString();
        }
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
        return host;
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
        String id = spec.id();
        if (id == null || !SAFE_ID.matcher(id).matches()) {
            throw new RuntimeStartException("invalid sandbox id \"" + id
                    + "\": use up to 128 letters, digits, '.', '_' and '-'");
        }
        String workdir = normalize(spec.workdir() == null || spec.workdir().isBlank() ? "/" : spec.workdir());
        if (!workdir.startsWith("/")) {
            throw new RuntimeStartException("the sandbox workdir must be an absolute path: " + spec.workdir());
        }
        Map<String, String> env;
        try {
            env = ProcessSpecCheck.env(spec.env());
        } catch (ProcessStartException e) {
            throw new RuntimeStartException(e.getMessage());
        }
        if (spec.initialFilesystem().isPresent()
                && !Files.isDirectory(spec.initialFilesystem().get(), LinkOption.NOFOLLOW_LINKS)) {
            throw new RuntimeStartException("the initial filesystem " + spec.initialFilesystem().get()
                    + " is not a directory");
        }
        if (spec.network()) {
            fence.install(); // repairs rules a dockerd restart or an operator flushed
        }
        boolean isDefault = spec.image() == null || spec.image().isBlank();
        String image = isDefault ? defaultImage : spec.image().trim();
        String imageWorkdir = ensureImage(image, isDefault);
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
        HostConfig hostConfig = HostConfig.newHostConfig()
                .withNetworkMode(spec.network() ? NetworkFence.SANDBOXES : "none")
                .withCapDrop(Capability.ALL)
                .withCapAdd(KEPT_CAPABILITIES.toArray(Capability[]::new))
                .withSecurityOpts(List.of("no-new-privileges"))
                .withPidsLimit(PIDS_MAX)
                .withInit(false)
                .withBinds(binds(spec.volumes(), sources));
        spec.limits().milliCpus().ifPresent(m -> hostConfig.withNanoCPUs(m * 1_000_000L));
        spec.limits().memoryBytes().ifPresent(m -> hostConfig.withMemory(m).withMemorySwap(m));
        List<String> envList = new ArrayList<>();
        env.forEach((k, v) -> envList.add(k + "=" + v));
        String containerId;
        try {
            CreateContainerResponse created = client.createContainerCmd(image)
                    .withName(containerName(id))
                    .withHostName(SandboxHostname.of(id))
                    .withLabels(Map.of(LABEL_SANDBOX, id, LABEL_SERVER, key))
                    .withEntrypoint("/bin/sh", "-c", Scripts.INIT)
                    .withCmd(lifetime == null ? List.of("chalk-init")
                            : List.of("chalk-init", Long.toString(boundSeconds(lifetime))))
                    .withStopTimeout((int) CLOSE_GRACE.toSeconds())
                    .withEnv(envList)
                    .withWorkingDir(workdir)
                    .withHostConfig(hostConfig)
                    .exec();
            containerId = created.getId();
        } catch (ConflictException e) {
            volumes.release(id);
            throw new RuntimeStartException("a sandbox with id " + id + " is already running (container "
                    + containerName(id) + " exists)");
        } catch (RuntimeException e) {
            volumes.release(id);
            throw new RuntimeStartException("the Docker engine could not create the sandbox's container: "
                    + engineMessage(e), e);
        }
        DockerSandbox sandbox;
        try {
            if (spec.initialFilesystem().isPresent()) {
                files.copyInto(containerId, spec.initialFilesystem().get());
            }
            try {
                client.startContainerCmd(containerId).exec();
            } catch (RuntimeException e) {
                throw new RuntimeStartException("the Docker engine could not start the sandbox's container: "
                        + engineMessage(e), e);
            }
            InspectContainerResponse inspected = client.inspectContainerCmd(containerId).exec();
            if (!Boolean.TRUE.equals(inspected.getState().getRunning())) {
                throw new RuntimeStartException("the sandbox's container stopped right after starting"
                        + exitDetail(inspected) + logsOf(containerId));
            }
            sandbox = new DockerSandbox(this, id, containerId, workdir, hostOf(inspected), false);
            if (sandboxes.putIfAbsent(id, sandbox) != null) {
                throw new RuntimeStartException("a sandbox with id " + id + " is already running");
            }
        } catch (RuntimeStartException | RuntimeException e) {
            removeContainer(containerId);
            volumes.release(id);
            if (e instanceof RuntimeStartException rse) {
                throw rse;
            }
            throw new RuntimeStartException("cannot start sandbox " + id + ": " + engineMessage(e), e);
        }
        watchContainer(sandbox);
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

    /** The seconds after which a container's init ends it: the lifetime, the margin, rounded up. */
    private long boundSeconds(Duration lifetime) {
        Duration bound = lifetime.plus(lifetimeMargin);
        return Math.max(1, (bound.toMillis() + 999) / 1000);
    }

    /** Makes sure the engine has the image, pulling it if needed; returns the image's WORKDIR ("" when none). */
    private String ensureImage(String image, boolean isDefault) throws RuntimeStartException {
        try {
            return workdirOf(client.inspectImageCmd(image).exec());
        } catch (NotFoundException e) {
            // pull it below
        } catch (RuntimeException e) {
            throw new RuntimeStartException("cannot look up image \"" + image + "\" on the Docker engine at " + host
                    + ": " + engineMessage(e), e);
        }
        log.info("Pulling image {} for a sandbox", image);
        Optional<String> failed = ImagePull.pull(client, image, Duration.ofMinutes(10));
        String problem;
        if (failed.isEmpty()) {
            try {
                return workdirOf(client.inspectImageCmd(image).exec());
            } catch (RuntimeException e) {
                problem = engineMessage(e);
            }
        } else {
            problem = failed.get();
        }
        if (isDefault) {
            throw new RuntimeStartException("the default sandbox image \"" + image + "\" is not on the Docker engine"
                    + " at " + host + " and could not be pulled (" + problem + "): pull or build it (ci/build-test-"
                    + "images.sh builds chalk-compute-test/busybox:latest from Debian's busybox-static), or set the"
                    + " docker runtime's default image, or create the sandbox with an image the engine has");
        }
        throw new RuntimeStartException("image \"" + image + "\" is not on the Docker engine at " + host
                + " and could not be pulled: " + problem);
    }

    private static String workdirOf(com.github.dockerjava.api.command.InspectImageResponse inspected) {
        var config = inspected.getConfig();
        String workdir = config == null ? null : config.getWorkingDir();
        return workdir == null || !workdir.startsWith("/") ? "" : workdir;
    }

    /** Where a container's processes are on this host, when they are visible here. */
    private DockerSandbox.Host hostOf(InspectContainerResponse inspected) {
        Long pid = inspected.getState().getPidLong();
        String containerId = inspected.getId();
        if (!useHost || pid == null || pid <= 1 || Procfs.innermostPid(pid) != 1
                || !Procfs.cgroups(pid).contains(containerId)) {
            return null;
        }
        Optional<String> ns = Procfs.pidNamespace(pid);
        if (ns.isEmpty()) {
            return null;
        }
        ExecGroups groups = ExecGroups.of(pid, containerId).orElse(null);
        if (groups == null) {
            log.debug("No exec groups for container {}: killTree follows the process tree", containerId);
        }
        return new DockerSandbox.Host(pid, ns.get(), groups);
    }

    /** Waits for the container to stop, to notice a sandbox that stops by itself. */
    private void watchContainer(DockerSandbox sandbox) {
        if (closed) {
            return;
        }
        try {
            client.waitContainerCmd(sandbox.containerId()).exec(new ImagePull.Quiet<WaitResponse>() {
                @Override
                public void onComplete() {
                    super.onComplete();
                    containerEnded(sandbox);
                }

                @Override
                public void onError(Throwable throwable) {
                    super.onError(throwable);
                    containerEnded(sandbox);
                }
            });
        } catch (RuntimeException e) {
            log.debug("Cannot watch container of {}: {}", sandbox, e.toString());
        }
    }

    private void containerEnded(DockerSandbox sandbox) {
        if (closed || sandboxes.get(sandbox.id()) != sandbox) {
            return;
        }
        helpers.execute(() -> {
            InspectContainerResponse inspected;
            try {
                inspected = client.inspectContainerCmd(sandbox.containerId()).exec();
            } catch (NotFoundException e) {
                sandbox.containerStopped("the sandbox's container was removed outside this server");
                return;
            } catch (RuntimeException e) {
                // the engine is unreachable for the moment: look again shortly
                scheduler.schedule(() -> watchContainer(sandbox), 1, TimeUnit.SECONDS);
                return;
            }
            if (Boolean.TRUE.equals(inspected.getState().getRunning())) {
                scheduler.schedule(() -> watchContainer(sandbox), 100, TimeUnit.MILLISECONDS);
                return;
            }
            String reason = Boolean.TRUE.equals(inspected.getState().getOOMKilled())
                    ? "the sandbox's container ran out of memory and was stopped"
                    : "the sandbox's container stopped" + exitDetail(inspected);
            sandbox.containerStopped(reason);
        });
    }

    private static String exitDetail(InspectContainerResponse inspected) {
        Long code = inspected.getState().getExitCodeLong();
        if (code == null) {
            return "";
        }
        return code > 128 ? " (its init was killed by signal " + (code - 128) + ")"
                : code == 0 ? " (its lifetime ran out: the container's init ended it)"
                : " (its init exited with code " + code + ")";
    }

    private String logsOf(String containerId) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            client.logContainerCmd(containerId).withStdOut(true).withStdErr(true).withTail(20)
                    .exec(new ResultCallback.Adapter<com.github.dockerjava.api.model.Frame>() {
                        @Override
                        public void onNext(com.github.dockerjava.api.model.Frame frame) {
                            out.writeBytes(frame.getPayload());
                        }
                    }).awaitCompletion(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            return "";
        }
        String text = out.toString(StandardCharsets.UTF_8).trim();
        return text.isEmpty() ? "" : ": " + text.lines().reduce((a, b) -> a + "; " + b).orElse("");
    }

    /**
     * Finds this server's containers (by its {@value #LABEL_SERVER} label): running ones whose sandbox the store
     * still believes running are adopted; the others are removed.
     */
    @Override
    public Collection<RuntimeSandbox> reconcile(Collection<String> runningIds) {
        List<Container> containers;
        try {
            containers = client.listContainersCmd().withShowAll(true)
                    .withLabelFilter(Map.of(LABEL_SERVER, key)).exec();
        } catch (RuntimeException e) {
            log.warn("Cannot list the containers of this server: {}", engineMessage(e));
            return List.of();
        }
        List<RuntimeSandbox> adopted = new ArrayList<>();
        for (Container c : containers) {
            String id = c.getLabels() == null ? null : c.getLabels().get(LABEL_SANDBOX);
            if (id != null && sandboxes.containsKey(id)) {
                continue; // started by this runtime
            }
            if (id != null && runningIds.contains(id)) {
                try {
                    InspectContainerResponse inspected = client.inspectContainerCmd(c.getId()).exec();
                    if (Boolean.TRUE.equals(inspected.getState().getRunning())) {
                        String workdir = inspected.getConfig().getWorkingDir();
                        DockerSandbox sandbox = new DockerSandbox(this, id, c.getId(),
                                workdir == null || workdir.isBlank() ? "/" : workdir, hostOf(inspected),
                                Boolean.TRUE.equals(inspected.getState().getPaused()));
                        if (sandboxes.putIfAbsent(id, sandbox) == null) {
                            // a paused one's processes die when it is resumed... or never: left for terminate
                            int killed = Boolean.TRUE.equals(inspected.getState().getPaused()) ? 0
                                    : sandbox.killUnrecorded();
                            if (killed > 0) {
                                log.info("Killed {} process(es) that execs cut by the restart left in sandbox {}",
                                        killed, id);
                            }
                            watchContainer(sandbox);
                            adopted.add(sandbox);
                            log.info("Adopted sandbox {} (container {}) from an earlier run", id, c.getId());
                            continue;
                        }
                    }
                } catch (RuntimeException e) {
                    log.warn("Cannot adopt sandbox {}: {}", id, engineMessage(e));
                }
            }
            removeContainer(c.getId());
            log.info("Removed leftover container {} of sandbox {}", c.getId(), id);
        }
        List<String> kept = new ArrayList<>(sandboxes.keySet());
        volumes.releaseAllBut(kept); // the staged volumes of containers removed above, or gone with a crash
        return adopted;
    }

    /**
     * The container's binds: the staged {@code nosuid,nodev} mounts, bound as they are (their flags, read-only
     * included, carry over; the engine's own read-only remount would drop nosuid and nodev), or, where volumes cannot
     * be staged, the volumes themselves.
     */
    private List<Bind> binds(List<SandboxSpec.VolumeBinding> bindings, List<Path> sources) {
        List<Bind> binds = new ArrayList<>();
        for (int i = 0; i < bindings.size(); i++) {
            SandboxSpec.VolumeBinding v = bindings.get(i);
            boolean staged = !sources.get(i).equals(v.source());
            binds.add(new Bind(sources.get(i).toString(), new Volume(v.mountPath()),
                    v.readOnly() && !staged ? AccessMode.ro : AccessMode.rw));
        }
        return binds;
    }

    /** Unmounts the staged volumes of a sandbox whose container is gone. */
    void releaseVolumes(String sandboxId) {
        volumes.release(sandboxId);
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
        disconnect();
    }

    /** Disconnects without stopping anything, as a crashed server would; for tests of {@link #reconcile}. */
    void abandon() {
        closed = true;
        disconnect();
    }

    private void disconnect() {
        helpers.shutdownNow();
        scheduler.shutdownNow();
        closeQuietly(client);
        lock.release();
    }

    // ---- for sandboxes and processes ----

    EngineConnection.Address address() {
        return address;
    }

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

    DockerClient client() {
        return client;
    }

    void forget(DockerSandbox sandbox) {
        sandboxes.remove(sandbox.id(), sandbox);
    }

    /** What the engine knows of an exec; null when the exec (or its container) is gone. */
    record ExecState(boolean running, Integer exitCode, Long pid) {
    }

    ExecState inspectExec(String execId) {
        try {
            InspectExecResponse r = client.inspectExecCmd(execId).exec();
            Long code = r.getExitCodeLong();
            return new ExecState(Boolean.TRUE.equals(r.isRunning()), code == null ? null : code.intValue(),
                    r.getPidLong());
        } catch (NotFoundException e) {
            return null;
        }
    }

    /** Creates an exec; {@code whyNot} explains a refusal when the sandbox is stopping. */
    String createExec(String containerId, List<String> cmd, Map<String, String> env, boolean tty, boolean stdin,
                      Supplier<String> whyNot) throws ProcessStartException {
        List<String> envList = new ArrayList<>();
        env.forEach((k, v) -> envList.add(k + "=" + v));
        try {
            return client.execCreateCmd(containerId)
                    .withCmd(cmd.toArray(String[]::new))
                    .withEnv(envList)
                    .withTty(tty)
                    .withAttachStdin(stdin)
                    .withAttachStdout(true)
                    .withAttachStderr(true)
                    .exec().getId();
        } catch (RuntimeException e) {
            String why = whyNot.get();
            throw new ProcessStartException(why != null ? why : "the Docker engine refused the exec: "
                    + engineMessage(e), e);
        }
    }

    void resizeExec(String execId, int cols, int rows) {
        try {
            client.resizeExecCmd(execId).withSize(rows, cols).exec();
        } catch (RuntimeException e) {
            log.debug("Cannot resize exec {}: {}", execId, engineMessage(e));
        }
    }

    /** Runs a command in a container to its end, without stdin; returns its exit code, or -1 when it could not run. */
    int runInside(String containerId, List<String> cmd) {
        try {
            String execId = client.execCreateCmd(containerId).withCmd(cmd.toArray(String[]::new))
                    .withAttachStdout(true).withAttachStderr(true).exec().getId();
            try (EngineConnection c = EngineConnection.startExec(address, execId, false)) {
                c.in().transferTo(OutputStream.nullOutputStream());
            }
            for (int i = 0; i < 1000; i++) {
                ExecState st = inspectExec(execId);
                if (st == null) {
                    return -1;
                }
                if (!st.running() && st.exitCode() != null) {
                    return st.exitCode();
                }
                Thread.sleep(2);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            log.debug("Running {} in container {} failed: {}", cmd.get(0), containerId, e.toString());
        }
        return -1;
    }

    /** How many processes run in the container besides its init and the init's sleep, as the engine lists them. */
    int userProcessCount(String containerId) {
        try {
            long init = Optional.ofNullable(client.inspectContainerCmd(containerId).exec().getState().getPidLong())
                    .orElse(-1L);
            TopContainerResponse top = client.topContainerCmd(containerId).withPsArgs("-o pid,ppid,args").exec();
            List<String> titles = List.of(top.getTitles());
            int pid = titles.indexOf("PID");
            int ppid = titles.indexOf("PPID");
            int cmd = Math.max(titles.indexOf("COMMAND"), titles.indexOf("CMD"));
            int count = 0;
            for (String[] p : top.getProcesses()) {
                long thisPid = Long.parseLong(p[pid].trim());
                boolean initSleep = Long.parseLong(p[ppid].trim()) == init
                        && p[cmd].trim().startsWith(Scripts.INIT_SLEEP + " ");
                if (thisPid != init && !initSleep) {
                    count++;
                }
            }
            return count;
        } catch (RuntimeException e) {
            return 0;
        }
    }

    /** Whether the container runs (false when it is gone or the engine cannot say). */
    boolean containerRunning(String containerId) {
        try {
            return Boolean.TRUE.equals(client.inspectContainerCmd(containerId).exec().getState().getRunning());
        } catch (RuntimeException e) {
            return false;
        }
    }

    void pause(String containerId) {
        client.pauseContainerCmd(containerId).exec();
    }

    void unpause(String containerId) {
        client.unpauseContainerCmd(containerId).exec();
    }

    /** Removes a container with its writable layer and anonymous volumes; kills whatever still runs in it. */
    void removeContainer(String containerId) {
        for (int attempt = 0; attempt < 50; attempt++) {
            try {
                client.removeContainerCmd(containerId).withForce(true).withRemoveVolumes(true).exec();
                return;
            } catch (NotFoundException e) {
                return;
            } catch (ConflictException e) { // a removal in progress
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** The mount points of a container's bind mounts. */
    List<String> mountPathsOf(String containerId) {
        List<String> paths = new ArrayList<>();
        InspectContainerResponse inspected = client.inspectContainerCmd(containerId).exec();
        if (inspected.getMounts() != null) {
            inspected.getMounts().forEach(m -> {
                if (m.getDestination() != null) {
                    paths.add(m.getDestination().getPath());
                }
            });
        }
        return paths;
    }

    /** Starts watching an exec's host process, to notice its end while a daemon holds its output open. */
    void watch(DockerProcess p) {
        watched.add(p);
    }

    void unwatch(DockerProcess p) {
        watched.remove(p);
    }

    private void watchExits() {
        try {
            for (DockerProcess p : watched) {
                if (p.exited()) {
                    watched.remove(p);
                } else if (p.hostProcessGone()) {
                    watched.remove(p);
                    p.hostProcessExited();
                }
            }
        } catch (RuntimeException e) {
            log.debug("Watching exec processes: {}", e.toString());
        }
    }

    // ---- files ----

    /** Copies what the container of {@code sandbox} changed to {@code destination}; see {@link ContainerFiles}. */
    int exportChanges(DockerSandbox sandbox, Path destination) throws IOException {
        return files.exportChanges(sandbox.containerId(), sandbox.mountPaths(), destination);
    }

    // ---- helpers ----

    /** The text of an engine error, without docker-java's {@code Status 404: {"message":...}} wrapping. */
    static String engineMessage(Throwable e) {
        String m = e.getMessage();
        if (m == null) {
            return e.getClass().getSimpleName();
        }
        Matcher matcher = MESSAGE.matcher(m);
        if (e instanceof DockerException && matcher.find()) {
            return matcher.group(1).replace("\\\"", "\"").replace("\\\\", "\\");
        }
        return m.trim();
    }

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

    private static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException e) {
            // nothing to do
        }
    }

    /** Builds image specs through this engine's build API; see {@link DockerImageBuilder}. */
    @Override
    public ai.chalk.compute.server.image.ImageBuilder imageBuilder() {
        return imageBuilder;
    }
}
