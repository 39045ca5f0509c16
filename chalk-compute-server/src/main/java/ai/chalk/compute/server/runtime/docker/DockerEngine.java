package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.command.InspectExecResponse;
import com.github.dockerjava.api.command.InspectImageResponse;
import com.github.dockerjava.api.command.TopContainerResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.api.model.Version;
import com.github.dockerjava.api.model.WaitResponse;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import com.github.dockerjava.transport.DockerHttpClient;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Docker Engine as the docker runtime's sandboxes use it: every container, exec, image and event call of the
 * runtime and its sandboxes goes through here, each next to the words a user reads when the engine refuses it. Kept
 * apart from the runtime so that the sandbox lifecycle reads as what it does, not as docker-java's builders, and so
 * that what is asked of the engine (and what a refusal becomes) can be reviewed in one place.
 *
 * <p>Exec streams bypass docker-java ({@link EngineConnection}: stdin must be half-closable); the network fence, the
 * image builder and image pulls reach the engine through {@link #client()} for the calls only they make.
 */
final class DockerEngine implements Closeable {

    private static final Logger log = LoggerFactory.getLogger(DockerEngine.class);
    private static final Duration PING_TIMEOUT = Duration.ofSeconds(5);
    private static final Pattern MESSAGE = Pattern.compile("\"message\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

    private final String host;
    private final EngineConnection.Address address;
    private final ApacheDockerHttpClient http;
    private final DockerClient client;
    private final Version version;
    private volatile Info info;
    private final ContainerFiles files;

    private DockerEngine(
            String host,
            EngineConnection.Address address,
            ApacheDockerHttpClient http,
            DockerClient client,
            Version version,
            Executor helpers) {
        this.host = host;
        this.address = address;
        this.http = http;
        this.client = client;
        this.version = version;
        this.files = new ContainerFiles(client, helpers);
    }

    /**
     * Connects to the engine at {@code host} and asks for its version, so that an engine that is not there is an
     * error now rather than at the first sandbox.
     *
     * @param helpers where file copies in and out of containers run
     * @throws IllegalStateException when no engine answers, or TLS for it cannot be set up
     */
    static DockerEngine connect(String host, Executor helpers) {
        DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
                .withDockerHost(host)
                .build();
        SSLContext tls = null;
        if (config.getSSLConfig() != null) {
            try {
                tls = config.getSSLConfig().getSSLContext();
            } catch (Exception e) {
                throw new IllegalStateException(
                        "cannot set up TLS for the Docker engine at " + host + ": " + e.getMessage(), e);
            }
        }
        EngineConnection.Address address = new EngineConnection.Address(URI.create(host), tls);
        String problem = EngineConnection.pingWithin(address, PING_TIMEOUT);
        if (problem != null) {
            throw new IllegalStateException(
                    "no Docker engine at " + host + ": start dockerd or use --runtime local (" + problem + ")");
        }
        ApacheDockerHttpClient http = new ApacheDockerHttpClient.Builder()
                .dockerHost(config.getDockerHost())
                .sslConfig(config.getSSLConfig())
                .maxConnections(4096)
                .connectionTimeout(Duration.ofSeconds(10))
                .build();
        DockerClient client = DockerClientImpl.getInstance(config, http);
        Version version;
        try {
            version = client.versionCmd().exec();
        } catch (RuntimeException e) {
            closeQuietly(client);
            throw new IllegalStateException(
                    "no Docker engine at " + host + ": start dockerd or use --runtime local (" + engineMessage(e) + ")",
                    e);
        }
        return new DockerEngine(host, address, http, client, version, helpers);
    }

    /** Whether an engine answers at {@code host} within {@code timeout}; see {@link DockerRuntime#engineAnswers}. */
    static boolean answers(String host, Duration timeout) {
        SSLContext tls = null;
        if (!host.startsWith("unix:")) {
            try {
                DefaultDockerClientConfig config = DefaultDockerClientConfig.createDefaultConfigBuilder()
                        .withDockerHost(host)
                        .build();
                tls = config.getSSLConfig() == null
                        ? null
                        : config.getSSLConfig().getSSLContext();
            } catch (Exception e) {
                return false;
            }
        }
        try {
            return EngineConnection.pingWithin(new EngineConnection.Address(URI.create(host), tls), timeout) == null;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    // ---- the engine itself ----

    /** The engine's address, as configured. */
    String host() {
        return host;
    }

    /** Whether the engine is reached through a unix socket, that is, runs on this host. */
    boolean onUnixSocket() {
        URI uri = URI.create(host);
        return uri.getScheme() != null && uri.getScheme().equals("unix");
    }

    /** The engine's version, as it said when connected. */
    String version() {
        return version.getVersion();
    }

    /** The architecture of the binaries the engine runs; null when it did not say. */
    String arch() {
        return version.getArch();
    }

    /** Whether the engine runs containers in a remapped user namespace ({@code dockerd --userns-remap}). */
    boolean rootIsRemapped() {
        return info().map(Info::getSecurityOptions)
                .map(options -> options.stream().anyMatch(o -> o.startsWith("name=userns")))
                .orElse(false);
    }

    /** The engine's cgroup driver ({@code cgroupfs} or {@code systemd}); empty when it did not say. */
    Optional<String> cgroupDriver() {
        return info().map(Info::getCGroupDriver);
    }

    /** The engine's data root ({@code /var/lib/docker}), where its containers' writable layers are; as it says. */
    Optional<Path> dataRoot() {
        return info().map(Info::getDockerRootDir).map(Path::of);
    }

    /** What the engine says of itself, asked once; empty when it did not answer. */
    private Optional<Info> info() {
        Info known = info;
        if (known == null) {
            try {
                known = client.infoCmd().exec();
            } catch (RuntimeException e) {
                return Optional.empty();
            }
            info = known;
        }
        return Optional.of(known);
    }

    /** Whether the engine has containers, running or not, of the server keyed {@code serverKey}. */
    boolean hasContainersOf(String serverKey) {
        return !client.listContainersCmd()
                .withShowAll(true)
                .withLabelFilter(Map.of(DockerRuntime.LABEL_SERVER, serverKey))
                .exec()
                .isEmpty();
    }

    /**
     * The writable layers of every Chalk server's running sandboxes on the engine (a label {@value
     * DockerRuntime#LABEL_SERVER}), with what each wrote. Slow: the engine walks every layer to answer.
     */
    List<LayerDiskWatch.Layer> layers() {
        List<LayerDiskWatch.Layer> layers = new ArrayList<>();
        for (Container c : client.listContainersCmd()
                .withShowSize(true)
                .withLabelFilter(List.of(DockerRuntime.LABEL_SERVER))
                .exec()) {
            Map<String, String> labels = c.getLabels() == null ? Map.of() : c.getLabels();
            String sandbox = labels.get(DockerRuntime.LABEL_SANDBOX);
            if (sandbox != null && c.getSizeRw() != null) {
                layers.add(new LayerDiskWatch.Layer(
                        c.getId(), sandbox, labels.get(DockerRuntime.LABEL_SERVER), c.getSizeRw()));
            }
        }
        return layers;
    }

    /** The docker-java client, for the network fence and the image builder, which make calls of their own. */
    DockerClient client() {
        return client;
    }

    /** The raw HTTP client, for the image builder's streamed build requests. */
    DockerHttpClient http() {
        return http;
    }

    // ---- images ----

    /** Makes sure the engine has the image, pulling it if needed; returns the image's WORKDIR ("" when none). */
    String ensureImage(String image, boolean isDefault) throws RuntimeStartException {
        try {
            return workdirOf(client.inspectImageCmd(image).exec());
        } catch (NotFoundException e) {
            // pull it below
        } catch (RuntimeException e) {
            throw new RuntimeStartException(
                    "cannot look up image \"" + image + "\" on the Docker engine at " + host + ": " + engineMessage(e),
                    e);
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

    private static String workdirOf(InspectImageResponse inspected) {
        var config = inspected.getConfig();
        String workdir = config == null ? null : config.getWorkingDir();
        return workdir == null || !workdir.startsWith("/") ? "" : workdir;
    }

    // ---- containers ----

    /** Creates the container {@code def} describes; returns its id. */
    String createContainer(SandboxContainerDef def) throws RuntimeStartException {
        try {
            return def.applyTo(client.createContainerCmd(def.image())).exec().getId();
        } catch (ConflictException e) {
            throw new RuntimeStartException("a sandbox with id " + def.sandboxId() + " is already running (container "
                    + def.containerName() + " exists)");
        } catch (RuntimeException e) {
            throw new RuntimeStartException(
                    "the Docker engine could not create the sandbox's container: " + engineMessage(e), e);
        }
    }

    /** Copies a host directory into a created container's filesystem; see {@link ContainerFiles#copyInto}. */
    void copyInto(String containerId, Path dir) throws RuntimeStartException {
        files.copyInto(containerId, dir);
    }

    /**
     * Starts a created container and returns it as the engine sees it once started.
     *
     * @throws RuntimeStartException when the engine refuses, or the container stopped at once (with its init's last
     *                               words, which say what is wrong with the image)
     */
    InspectContainerResponse start(String containerId) throws RuntimeStartException {
        try {
            client.startContainerCmd(containerId).exec();
        } catch (RuntimeException e) {
            throw new RuntimeStartException(
                    "the Docker engine could not start the sandbox's container: " + engineMessage(e), e);
        }
        InspectContainerResponse inspected =
                client.inspectContainerCmd(containerId).exec();
        if (!Boolean.TRUE.equals(inspected.getState().getRunning())) {
            throw new RuntimeStartException("the sandbox's container stopped right after starting"
                    + exitDetail(inspected) + logsOf(containerId));
        }
        return inspected;
    }

    /** The container as the engine sees it; a {@link RuntimeException} when it is gone or the engine cannot say. */
    InspectContainerResponse inspect(String containerId) {
        return client.inspectContainerCmd(containerId).exec();
    }

    /**
     * The container as the engine sees it, or empty when it is gone; a {@link RuntimeException} when the engine cannot
     * say.
     */
    Optional<InspectContainerResponse> inspectIfPresent(String containerId) {
        try {
            return Optional.of(client.inspectContainerCmd(containerId).exec());
        } catch (NotFoundException e) {
            return Optional.empty();
        }
    }

    /** Whether the container runs (false when it is gone or the engine cannot say). */
    boolean containerRunning(String containerId) {
        try {
            return Boolean.TRUE.equals(
                    client.inspectContainerCmd(containerId).exec().getState().getRunning());
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** Every container, running or not, labelled {@code label=value}. */
    List<Container> containersLabelled(String label, String value) {
        return client.listContainersCmd()
                .withShowAll(true)
                .withLabelFilter(Map.of(label, value))
                .exec();
    }

    /**
     * Pauses the container. One paused already (by another client of the engine, or a pause the engine reports late)
     * is what was asked for: the suspend goes on rather than failing on the engine's error.
     */
    void pause(String containerId) {
        try {
            client.pauseContainerCmd(containerId).exec();
        } catch (DockerException e) { // 409 here, 500 for the unpause
            if (!String.valueOf(e.getMessage()).contains("is already paused")) {
                throw e;
            }
        }
    }

    /** Unpauses the container; one that is not paused is what was asked for. */
    void unpause(String containerId) {
        try {
            client.unpauseContainerCmd(containerId).exec();
        } catch (DockerException e) {
            if (!String.valueOf(e.getMessage()).contains("is not paused")) {
                throw e;
            }
        }
    }

    /** Removes a container with its writable layer and anonymous volumes; kills whatever still runs in it. */
    void removeContainer(String containerId) {
        for (int attempt = 0; attempt < 50; attempt++) {
            try {
                client.removeContainerCmd(containerId)
                        .withForce(true)
                        .withRemoveVolumes(true)
                        .exec();
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

    /**
     * Calls {@code ended} once the container stops (or the wait fails: the caller looks at the container then).
     * Throws when the engine does not take the wait.
     */
    void onStop(String containerId, Runnable ended) {
        client.waitContainerCmd(containerId).exec(new ImagePull.Quiet<WaitResponse>() {
            @Override
            public void onComplete() {
                super.onComplete();
                ended.run();
            }

            @Override
            public void onError(Throwable throwable) {
                super.onError(throwable);
                ended.run();
            }
        });
    }

    /** The mount points of a container's bind mounts. */
    List<String> mountPathsOf(String containerId) {
        List<String> paths = new ArrayList<>();
        InspectContainerResponse inspected =
                client.inspectContainerCmd(containerId).exec();
        if (inspected.getMounts() != null) {
            inspected.getMounts().forEach(m -> {
                if (m.getDestination() != null) {
                    paths.add(m.getDestination().getPath());
                }
            });
        }
        return paths;
    }

    /** How many processes run in the container besides its init and the init's sleep, as the engine lists them. */
    int userProcessCount(String containerId) {
        try {
            long init = Optional.ofNullable(client.inspectContainerCmd(containerId)
                            .exec()
                            .getState()
                            .getPidLong())
                    .orElse(-1L);
            TopContainerResponse top = client.topContainerCmd(containerId)
                    .withPsArgs("-o pid,ppid,args")
                    .exec();
            List<String> titles = List.of(top.getTitles());
            int pid = titles.indexOf("PID");
            int ppid = titles.indexOf("PPID");
            int cmd = Math.max(titles.indexOf("COMMAND"), titles.indexOf("CMD"));
            String initArgs = null;
            for (String[] p : top.getProcesses()) {
                if (Long.parseLong(p[pid].trim()) == init) {
                    initArgs = p[cmd].trim();
                }
            }
            int count = 0;
            for (String[] p : top.getProcesses()) {
                long thisPid = Long.parseLong(p[pid].trim());
                String args = p[cmd].trim();
                // the keep-alive, or the init's fork about to become it (it still shows the init's arguments)
                boolean initSleep = Long.parseLong(p[ppid].trim()) == init
                        && (args.startsWith(Scripts.INIT_SLEEP + " ") || args.equals(initArgs));
                if (thisPid != init && !initSleep) {
                    count++;
                }
            }
            return count;
        } catch (RuntimeException e) {
            return 0;
        }
    }

    /** How a stopped container's init ended, as a parenthesized remark; "" when the engine does not say. */
    static String exitDetail(InspectContainerResponse inspected) {
        Long code = inspected.getState().getExitCodeLong();
        if (code == null) {
            return "";
        }
        return code > 128
                ? " (its init was killed by signal " + (code - 128) + ")"
                : code == 0
                        ? " (its lifetime ran out: the container's init ended it)"
                        : " (its init exited with code " + code + ")";
    }

    /** The container's last log lines, as {@code ": line; line"}; "" when there are none. */
    private String logsOf(String containerId) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            client.logContainerCmd(containerId)
                    .withStdOut(true)
                    .withStdErr(true)
                    .withTail(20)
                    .exec(new ResultCallback.Adapter<Frame>() {
                        @Override
                        public void onNext(Frame frame) {
                            out.writeBytes(frame.getPayload());
                        }
                    })
                    .awaitCompletion(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            return "";
        }
        String text = out.toString(StandardCharsets.UTF_8).trim();
        return text.isEmpty()
                ? ""
                : ": " + text.lines().reduce((a, b) -> a + "; " + b).orElse("");
    }

    // ---- execs ----

    /** What the engine knows of an exec; null when the exec (or its container) is gone. */
    record ExecState(boolean running, Integer exitCode, Long pid) {}

    ExecState inspectExec(String execId) {
        try {
            InspectExecResponse r = client.inspectExecCmd(execId).exec();
            Long code = r.getExitCodeLong();
            return new ExecState(
                    Boolean.TRUE.equals(r.isRunning()), code == null ? null : code.intValue(), r.getPidLong());
        } catch (NotFoundException e) {
            return null;
        }
    }

    /** Creates an exec; {@code whyNot} explains a refusal when the sandbox is stopping. */
    String createExec(
            String containerId,
            List<String> cmd,
            Map<String, String> env,
            boolean tty,
            boolean stdin,
            Supplier<String> whyNot)
            throws ProcessStartException {
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
                    .exec()
                    .getId();
        } catch (RuntimeException e) {
            String why = whyNot.get();
            throw new ProcessStartException(
                    why != null ? why : "the Docker engine refused the exec: " + engineMessage(e), e);
        }
    }

    /** Starts a created exec over its own connection, which carries its stdin and output. */
    EngineConnection startExec(String execId, boolean tty) throws IOException {
        return EngineConnection.startExec(address, execId, tty);
    }

    void resizeExec(String execId, int cols, int rows) {
        try {
            client.resizeExecCmd(execId).withSize(rows, cols).exec();
        } catch (RuntimeException e) {
            log.debug("Cannot resize exec {}: {}", execId, engineMessage(e));
        }
    }

    /** How long {@link #runInside} waits for its command's output to end. */
    static final long RUN_INSIDE_SECONDS = 5;

    /**
     * Runs a command in a container to its end, without stdin, for at most {@value #RUN_INSIDE_SECONDS} s; returns its
     * exit code, or -1 when it could not run or did not end in time.
     */
    int runInside(String containerId, List<String> cmd) {
        try {
            String execId = client.execCreateCmd(containerId)
                    .withCmd(cmd.toArray(String[]::new))
                    .withAttachStdout(true)
                    .withAttachStderr(true)
                    .exec()
                    .getId();
            try (EngineConnection c = EngineConnection.startExec(address, execId, false)) {
                // the command is the sandbox's /bin/sh, which its root may have made wait forever: a terminate or a
                // signal then never came back (the container kept running, its place taken, a server thread held)
                CompletableFuture<Void> deadline = CompletableFuture.runAsync(
                        c::close, CompletableFuture.delayedExecutor(RUN_INSIDE_SECONDS, TimeUnit.SECONDS));
                try {
                    c.in().transferTo(OutputStream.nullOutputStream());
                } finally {
                    deadline.cancel(false);
                }
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

    // ---- files ----

    /** Copies what a container changed to {@code destination}; see {@link ContainerFiles#exportChanges}. */
    int exportChanges(String containerId, List<String> mountPaths, Path destination, BooleanSupplier stop)
            throws IOException {
        return files.exportChanges(containerId, mountPaths, destination, stop);
    }

    // ---- errors ----

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

    /** Disconnects; containers are left as they are. */
    @Override
    public void close() {
        closeQuietly(client);
    }

    private static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException e) {
            // nothing to do
        }
    }
}
