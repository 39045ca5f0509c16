package ai.chalk.compute.sandbox;

import ai.chalk.compute.image.Image;
import ai.chalk.compute.network.Credential;
import ai.chalk.compute.network.NetworkPolicy;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ResourceLimits;
import ai.chalk.compute.proto.sandbox.v1.VolumeMount;
import ai.chalk.compute.secret.Secret;
import ai.chalk.compute.secret.SecretBindings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * An isolated environment on a Chalk Compute server in which you run commands.
 *
 * <p>A sandbox is either <em>defined</em> — built with {@link #builder()} and not running yet —
 * or <em>started</em>: created on a server by {@link SandboxClient#create()} or
 * {@link SandboxClient#run(Sandbox)}, or looked up with {@link SandboxClient#get(String)}.
 * <pre>{@code
 * Sandbox sandbox = Sandbox.builder().image(Image.debianSlim()).cpu("2").memory("4Gi").build();
 * client.run(sandbox);
 * try {
 *     ExecResult result = sandbox.exec("echo", "hello world");
 *     System.out.println(result.stdoutText());
 * } finally {
 *     sandbox.terminate();
 * }
 * }</pre>
 *
 * <p>A sandbox is {@link AutoCloseable}: closing a sandbox this handle created terminates it, so
 * try-with-resources cleans up; closing a handle from {@link SandboxClient#get(String)} or
 * {@link SandboxClient#attach(String)} leaves the sandbox running unless you ask with {@link #terminateOnClose()}.
 * <pre>{@code
 * try (Sandbox sandbox = client.create(Sandbox.builder().lifetime(Duration.ofMinutes(30)))) {
 *     sandbox.exec("echo", "hello");
 * } // terminated here
 * }</pre>
 *
 * <p>A started sandbox is a handle: it holds the sandbox's id and the {@linkplain #info() last
 * information fetched}; every operation asks the server. Handles are thread-safe, and many
 * commands can run in one sandbox at the same time.
 */
public final class Sandbox implements AutoCloseable {

    private final Definition definition;
    private final Object lock = new Object();
    private final List<VolumeMount> mounts = new ArrayList<>(); // guarded by lock
    private volatile SandboxClient client;
    private volatile SandboxInfo info;
    private volatile boolean infoFetched;
    private boolean starting; // guarded by lock
    private volatile List<String> uploadedSecrets = List.of();
    private volatile boolean terminateOnClose;
    private volatile boolean closed;

    private Sandbox(Definition definition) {
        this.definition = definition;
    }

    Sandbox(SandboxClient client, SandboxInfo info) {
        this.definition = null;
        this.client = client;
        this.info = info;
        this.infoFetched = true;
    }

    /** A handle known only by id: nothing is fetched until an operation needs the server. */
    Sandbox(SandboxClient client, String id) {
        this.definition = null;
        this.client = client;
        this.info = new SandboxInfo(id, Optional.empty(), "UNKNOWN", null, Optional.empty(), Optional.empty());
        this.infoFetched = false;
    }

    /** Starts the definition of a sandbox, to be started with {@link SandboxClient#run(Sandbox)}. */
    public static Builder builder() {
        return new Builder();
    }

    /** Whether this sandbox has been started on a server (by {@code create}, {@code run} or {@code get}). */
    public boolean isStarted() {
        return client != null;
    }

    /**
     * The sandbox's id on the server.
     *
     * @throws IllegalStateException when the sandbox has not been started
     */
    public String id() {
        return started().id();
    }

    /**
     * What the server reported about the sandbox when it was last asked (at creation, lookup or
     * {@link #refresh()}); it is not fetched again, except once for a handle made by
     * {@link SandboxClient#attach(String)}, which has not asked yet.
     *
     * @throws IllegalStateException when the sandbox has not been started
     */
    public SandboxInfo info() {
        SandboxInfo current = started();
        return infoFetched ? current : refresh();
    }

    /**
     * Fetches the sandbox's current information from the server, including whether it has terminated.
     *
     * @return the new information, also returned by {@link #info()} from now on
     * @throws ai.chalk.compute.error.SandboxNotFoundException when the server no longer knows the sandbox
     */
    public SandboxInfo refresh() {
        SandboxInfo current = started();
        SandboxInfo fresh = client.fetch(current.id());
        this.info = fresh;
        this.infoFetched = true;
        return fresh;
    }

    /**
     * Terminates the sandbox: its processes get SIGTERM and the server's default grace period (5 seconds) to exit,
     * then whatever is left is killed. It returns as soon as they are gone, so a sandbox with nothing running stops
     * at once.
     */
    public void terminate() {
        SandboxInfo current = started();
        client.terminate(current.id(), null);
        forgetUploadedSecrets();
    }

    /**
     * Terminates the sandbox, giving its processes the grace period to exit after SIGTERM before
     * they are killed; it returns as soon as they are gone. Processes that a process starts to clean
     * up after its SIGTERM are waited for too, not signalled.
     *
     * @param gracePeriod how long processes may take to exit; rounded up to whole seconds
     */
    public void terminate(Duration gracePeriod) {
        Objects.requireNonNull(gracePeriod, "gracePeriod");
        if (gracePeriod.isNegative()) {
            throw new IllegalArgumentException("gracePeriod must not be negative, got " + gracePeriod);
        }
        SandboxInfo current = started();
        client.terminate(current.id(), gracePeriod);
        forgetUploadedSecrets();
    }

    /** Deletes the managed secrets saved for this sandbox's local secrets, once it has ended. */
    private void forgetUploadedSecrets() {
        List<String> uploaded = uploadedSecrets;
        uploadedSecrets = List.of();
        if (!uploaded.isEmpty()) {
            client.secrets().forget(uploaded);
        }
    }

    // ---- lifecycle of the handle: close, suspend, resume, snapshot ----

    /**
     * Makes {@link #close()} terminate the sandbox, as it does for a sandbox this handle created: for a handle from
     * {@link SandboxClient#get(String)} or {@link SandboxClient#attach(String)} that is now responsible for it.
     *
     * @return this handle
     */
    public Sandbox terminateOnClose() {
        started();
        this.terminateOnClose = true;
        return this;
    }

    /**
     * Terminates the sandbox if this handle created it (or {@link #terminateOnClose()} was called), as
     * {@link #terminate()} does; otherwise leaves it running. A sandbox that has ended already is left as it is, and
     * closing twice does nothing the second time. Closing a sandbox that was never started does nothing.
     */
    @Override
    public void close() {
        if (closed || client == null) {
            return;
        }
        closed = true;
        if (terminateOnClose) {
            terminate();
        }
    }

    /**
     * Suspends the sandbox: its processes are frozen where they stand, keeping their memory, files and connections,
     * until {@link #resume()}; it starts no new commands meanwhile (they fail with a
     * {@code FailedPreconditionException} saying it is suspended) and its lifetime keeps counting. Suspending a
     * suspended sandbox does nothing. {@link #refresh()} shows the state {@code SUSPENDED}.
     *
     * @throws ai.chalk.compute.error.FailedPreconditionException when the server's runtime cannot suspend
     *     sandboxes (it says why) or the sandbox has ended
     */
    public void suspend() {
        client.suspend(started().id());
    }

    /**
     * Lets the processes of a suspended sandbox continue, and it runs commands again. Resuming a running sandbox
     * does nothing.
     *
     * @throws ai.chalk.compute.error.FailedPreconditionException as {@link #suspend()}
     */
    public void resume() {
        client.resume(started().id());
    }

    /**
     * Takes a snapshot of the sandbox's files and waits (up to 10 minutes) until it is complete; the sandbox keeps
     * running, its processes paused during the copy. Start new sandboxes from it with {@link Snapshot#restore()}.
     *
     * @return the completed snapshot
     * @throws ai.chalk.compute.error.FailedPreconditionException when the server cannot snapshot this sandbox or
     *     the copy failed (the message says why)
     */
    public Snapshot snapshot() {
        return snapshot(Duration.ofMinutes(10));
    }

    /**
     * Takes a snapshot of the sandbox's files and waits until it is complete; see {@link #snapshot()}.
     *
     * @param timeout how long to wait for the copy; it carries on in the background after that
     * @return the completed snapshot
     * @throws ai.chalk.compute.error.FailedPreconditionException when the server cannot snapshot this sandbox, the
     *     copy failed, or it had not completed within the timeout (the message gives its id)
     */
    public Snapshot snapshot(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return client.snapshots().create(started().id(), timeout);
    }

    /**
     * Starts a command as a resumable {@link Session}: it keeps running when the handle detaches, and its output
     * can be read again from another process with {@link Session#attach}. The sandbox's
     * {@linkplain Builder#workdir(String) workdir} applies as for exec.
     *
     * @param command the command and its options
     * @return the session, attached
     * @throws ai.chalk.compute.error.FailedPreconditionException when the command cannot start
     */
    public Session session(Command command) {
        Objects.requireNonNull(command, "command");
        SandboxInfo current = started();
        String workdir = definition == null ? null : definition.placement.workdir();
        Command effective = workdir != null && command.workdir().isEmpty() ? command.workdir(workdir) : command;
        return Session.start(client, current.id(), effective);
    }

    /**
     * The sessions started in this sandbox ({@link #session(Command)}), running and ended, to find one to re-attach
     * to.
     *
     * @return the sessions, as the server knows them now
     */
    public List<SessionInfo> sessions() {
        return client.sessions(started().id());
    }

    /**
     * Runs a program and waits for it to exit. Its stdin is empty. Its output is collected in memory, at most
     * {@link Command#DEFAULT_OUTPUT_LIMIT} bytes (32 MiB) of stdout and stderr together; use
     * {@link #execStream(String, String...)} for more.
     *
     * @param command the program
     * @param args    its arguments
     * @return its output and exit status; a non-zero exit is a result, not an exception
     * @throws ExecOutputLimitException when it printed more than the limit (it is killed)
     * @throws ai.chalk.compute.error.ChalkComputeException when the server cannot run it
     */
    public ExecResult exec(String command, String... args) {
        return exec(Command.of(command, args));
    }

    /**
     * Runs a command and waits for it to exit. Its stdin is empty unless it runs on a PTY.
     *
     * <p>The whole output is collected in memory, so it is bounded: at most the command's
     * {@linkplain Command#outputLimit(long) output limit} of stdout and stderr together, 32 MiB unless set. A command
     * that prints more is killed and this throws {@link ExecOutputLimitException}. For output of any size, use
     * {@link #execStream(Command)}: it delivers the output as it comes and holds only a few messages in memory.
     *
     * @param command the command and its options
     * @return its output and exit status; a non-zero exit is a result, not an exception
     * @throws ExecTimeoutException when it ran longer than its {@linkplain Command#timeout(Duration) timeout};
     *         the output until then is in {@link ExecTimeoutException#partialResult()}
     * @throws ExecOutputLimitException when it printed more than its output limit
     * @throws ai.chalk.compute.error.ChalkComputeException when the server cannot run it
     */
    public ExecResult exec(Command command) {
        ExecCall call = startCall(command, command.pty().isEmpty());
        try {
            return call.collect(-1).orElseThrow();
        } finally {
            call.close();
        }
    }

    /**
     * Runs a program and returns its events as they happen. Its stdin is empty. Output of any size can be read this
     * way: events are pulled from the server as you consume them.
     *
     * @param command the program
     * @param args    its arguments
     * @return the events; close it when you stop reading before the end
     */
    public ExecStream execStream(String command, String... args) {
        return execStream(Command.of(command, args));
    }

    /**
     * Runs a command and returns its events as they happen. Its stdin is empty unless it runs on a PTY.
     *
     * @param command the command and its options
     * @return the events; close it when you stop reading before the end
     */
    public ExecStream execStream(Command command) {
        return new ExecStream(startCall(command, command.pty().isEmpty()));
    }

    /**
     * Starts a program you interact with: write to its stdin, send it signals, read its output.
     *
     * @param command the program
     * @param args    its arguments
     * @return the running process; close it to kill the program if it is still running
     */
    public ExecProcess execStart(String command, String... args) {
        return execStart(Command.of(command, args));
    }

    /**
     * Starts a command you interact with: write to its stdin, send it signals, read its output.
     *
     * @param command the command and its options
     * @return the running process; close it to kill the command if it is still running
     */
    public ExecProcess execStart(Command command) {
        return new ExecProcess(startCall(command, false));
    }

    /**
     * The sandbox's files: read, write, list, stat, move and remove them, and stream large files up
     * and down. Built on exec, so it works with any server.
     * <pre>{@code
     * sandbox.files().writeText("/data/test.txt", "Hello World");
     * String content = sandbox.files().readText("/data/test.txt");
     * sandbox.files().upload(Path.of("model.bin"), "/models/model.bin");
     * }</pre>
     *
     * @return the files API of this sandbox (a lightweight object; call this as often as you like)
     */
    public ai.chalk.compute.files.SandboxFiles files() {
        return ai.chalk.compute.files.SandboxFiles.of(this);
    }

    /**
     * Git helpers that run the sandbox's {@code git}: clone, status, branches, fetch, pull, push,
     * reset, restore, remotes and config. Built on exec, so it works with any server; failures throw
     * {@link ai.chalk.compute.git.GitException}.
     * <pre>{@code
     * sandbox.git().clone("https://github.com/octocat/Hello-World.git", "repo");
     * System.out.println(sandbox.git().status("repo").currentBranch());
     * }</pre>
     *
     * @return the git helpers of this sandbox (a lightweight object; call this as often as you like)
     */
    public ai.chalk.compute.git.SandboxGit git() {
        return ai.chalk.compute.git.SandboxGit.of(this);
    }

    private ExecCall startCall(Command command, boolean closeStdin) {
        Objects.requireNonNull(command, "command");
        SandboxInfo current = started();
        String workdir = definition == null ? null : definition.placement.workdir();
        Command effective = workdir != null && command.workdir().isEmpty() ? command.workdir(workdir) : command;
        return client.exec(current.id(), effective, closeStdin);
    }

    private SandboxInfo started() {
        SandboxInfo current = info;
        if (current == null || client == null) {
            throw new IllegalStateException("this sandbox has not been started: pass it to client.run(sandbox) first");
        }
        return current;
    }

    /** Called by the client once the server has created the sandbox. */
    void started(SandboxClient client, SandboxInfo info) {
        synchronized (lock) {
            if (this.client != null) {
                throw new IllegalStateException("sandbox " + this.info.id() + " is already started");
            }
            this.info = info;
            this.infoFetched = true;
            this.client = client;
            this.starting = false;
            this.terminateOnClose = true; // this handle created it
        }
    }

    /** Called by the client when creating the sandbox failed, so it can be run again. */
    void startFailed() {
        synchronized (lock) {
            starting = false;
        }
    }

    /**
     * Mounts a volume (see {@code SandboxClient#volumes()}) into this sandbox when it starts; call
     * before {@link SandboxClient#run(Sandbox)}. The volume's files persist after the sandbox ends
     * and can be shared by several sandboxes at once.
     *
     * @param volume the volume's name
     * @param path   where it appears inside the sandbox, an absolute path such as {@code /data}
     * @return this sandbox
     * @throws IllegalStateException when the sandbox has already been started
     */
    public Sandbox mountVolume(String volume, String path) {
        Objects.requireNonNull(volume, "volume");
        Objects.requireNonNull(path, "path");
        synchronized (lock) {
            if (client != null || starting) {
                throw new IllegalStateException("volumes are mounted when a sandbox starts; this one already has");
            }
            mounts.add(
                    VolumeMount.newBuilder().setName(volume).setMountPath(path).build());
        }
        return this;
    }

    /** The creation request, for a defined sandbox; checks it has not been started and marks it starting. */
    CreateSandboxRequest toCreateRequest() {
        synchronized (lock) {
            if (client != null) {
                throw new IllegalStateException("sandbox " + info.id() + " is already started");
            }
            if (definition == null) {
                throw new IllegalStateException("this sandbox handle has no definition to start");
            }
            if (starting) {
                throw new IllegalStateException("this sandbox is already being started");
            }
            CreateSandboxRequest request =
                    definition.toRequest().toBuilder().addAllVolumes(mounts).build();
            starting = true;
            return request;
        }
    }

    /** The secrets a defined sandbox receives; none for a handle. */
    SecretBindings secretBindings() {
        return definition == null ? SecretBindings.NONE : definition.secrets;
    }

    /** Called by the client with the managed secrets it saved for this sandbox's local secrets. */
    void uploadedSecrets(List<String> names) {
        this.uploadedSecrets = List.copyOf(names);
    }

    /** A defined sandbox's network policy, or null when it sets none; never one for a handle. */
    NetworkPolicy networkPolicy() {
        return definition == null ? null : definition.network;
    }

    /** A defined sandbox's credentials; none for a handle. */
    List<Credential> credentials() {
        return definition == null ? List.of() : definition.credentials;
    }

    /** Whether a defined sandbox is to get a workload identity; never for a handle. */
    boolean chalkIdentity() {
        return definition != null && definition.chalkIdentity;
    }

    /** The declarative image this sandbox is to be created from, if any: the client builds it before creating it. */
    Optional<Image> declaredImage() {
        return definition == null ? Optional.empty() : Optional.ofNullable(definition.imageSpec);
    }

    @Override
    public String toString() {
        SandboxInfo current = info;
        if (current == null) {
            return "Sandbox[not started" + (definition.image != null ? ", image=" + definition.image : "")
                    + (definition.name != null ? ", name=" + definition.name : "") + "]";
        }
        return "Sandbox[id=" + current.id()
                + current.name().map(n -> ", name=" + n).orElse("") + ", state=" + current.state() + "]";
    }

    /** The settings of a sandbox that has not been started. */
    private record Definition(
            String image,
            Image imageSpec,
            String cpu,
            String memory,
            Map<String, String> env,
            SecretBindings secrets,
            String name,
            List<String> entrypoint,
            List<VolumeMount> volumes,
            boolean chalkIdentity,
            Placement placement,
            NetworkPolicy network,
            List<Credential> credentials) {

        CreateSandboxRequest toRequest() {
            CreateSandboxRequest.Builder request = CreateSandboxRequest.newBuilder()
                    .putAllEnv(env)
                    .addAllEntrypoint(entrypoint)
                    .addAllVolumes(volumes);
            if (image != null) {
                request.setImage(image);
            } else if (imageSpec != null) {
                request.setImageSpec(imageSpec.toSpec());
            }
            if (cpu != null || memory != null) {
                ResourceLimits.Builder limits = ResourceLimits.newBuilder();
                if (cpu != null) {
                    limits.setCpu(cpu);
                }
                if (memory != null) {
                    limits.setMemory(memory);
                }
                request.setResourceLimits(limits);
            }
            if (name != null) {
                request.setName(name);
            }
            return request.build();
        }
    }

    /**
     * The options of a definition that only {@code chalk.sandbox.v2} carries (lifetime, tags, gpu, compute class),
     * the snapshot it starts from, and the default directory of its commands (kept by the handle).
     */
    private record Placement(
            Duration lifetime,
            Map<String, String> tags,
            String workdir,
            String snapshotId,
            String gpu,
            ComputeClass computeClass) {

        boolean needsV2() {
            return lifetime != null || !tags.isEmpty() || gpu != null || computeClass != null;
        }

        /** This placement with a client's defaults filled in where it sets nothing; its own tags win. */
        Placement withDefaults(SandboxDefaults defaults) {
            if (defaults.isEmpty() || snapshotId != null) {
                return this; // a sandbox from a snapshot keeps the snapshot's settings
            }
            Map<String, String> merged = new LinkedHashMap<>(defaults.tags());
            merged.putAll(tags);
            return new Placement(
                    lifetime != null ? lifetime : defaults.lifetime().orElse(null),
                    Collections.unmodifiableMap(merged),
                    workdir,
                    snapshotId,
                    gpu,
                    computeClass);
        }

        ChalkContainerSpec applyTo(ChalkContainerSpec spec) {
            ChalkContainerSpec.Builder b = spec.toBuilder().putAllTags(tags);
            if (lifetime != null) {
                b.setLifetime(com.google.protobuf.Duration.newBuilder()
                        .setSeconds(lifetime.getSeconds())
                        .setNanos(lifetime.getNano()));
            }
            if (gpu != null) {
                b.setResources(b.getResources().toBuilder().setGpu(gpu));
            }
            if (computeClass != null) {
                b.setComputeClass(computeClass.toProto());
            }
            return b.build();
        }
    }

    /** Whether a defined sandbox, with the client's defaults, has options only {@code chalk.sandbox.v2} carries. */
    boolean needsV2(SandboxDefaults defaults) {
        return definition != null && definition.placement.withDefaults(defaults).needsV2();
    }

    /** The v2 spec with this definition's lifetime, tags, gpu and compute class added, defaults filling gaps. */
    ChalkContainerSpec withV2Options(ChalkContainerSpec spec, SandboxDefaults defaults) {
        return definition == null
                ? spec
                : definition.placement.withDefaults(defaults).applyTo(spec);
    }

    /** The snapshot a defined sandbox starts from, if any. */
    Optional<String> snapshotSource() {
        return definition == null ? Optional.empty() : Optional.ofNullable(definition.placement.snapshotId());
    }

    /**
     * The definition of a sandbox: image, resources, environment. Build it, then start it with
     * {@link SandboxClient#run(Sandbox)}, or pass the builder to {@link SandboxClient#create(Builder)}.
     */
    public static final class Builder {
        private String image;
        private Image imageSpec;
        private String cpu;
        private String memory;
        private final Map<String, String> env = new LinkedHashMap<>();
        private final Map<String, Secret> secretEnv = new LinkedHashMap<>();
        private final List<Secret> bulkSecrets = new ArrayList<>();
        private String name;
        private List<String> entrypoint = List.of();
        private final List<VolumeMount> volumes = new ArrayList<>();
        private boolean chalkIdentity;
        // lifetime, tags, workdir, snapshot, gpu, compute class: see the "placement and lifecycle" group below
        private Duration lifetime;
        private final Map<String, String> tags = new LinkedHashMap<>();
        private String workdir;
        private String snapshotId;
        private String gpu;
        private ComputeClass computeClass;
        private NetworkPolicy network;
        private final List<Credential> credentials = new ArrayList<>();

        private Builder() {}

        /**
         * Mounts a volume into the sandbox; its files persist after the sandbox ends.
         *
         * @param volume the volume's name (create it with {@code client.volumes().create(name)})
         * @param path   where it appears inside the sandbox, an absolute path such as {@code /data}
         * @return this builder
         */
        public Builder mountVolume(String volume, String path) {
            volumes.add(VolumeMount.newBuilder()
                    .setName(Objects.requireNonNull(volume, "volume"))
                    .setMountPath(Objects.requireNonNull(path, "path"))
                    .build());
            return this;
        }

        /**
         * Runs the sandbox from an existing image, for example {@code "ubuntu:latest"}. Without an
         * image the server uses its default.
         *
         * @param image an image reference
         * @return this builder
         */
        public Builder image(String image) {
            this.image = Objects.requireNonNull(image, "image");
            this.imageSpec = null;
            return this;
        }

        /**
         * Runs the sandbox from a declarative image, which the server builds (and caches) first.
         *
         * @param image the image
         * @return this builder
         */
        public Builder image(Image image) {
            this.imageSpec = Objects.requireNonNull(image, "image");
            this.image = null;
            return this;
        }

        /**
         * Limits the sandbox's CPU, in Kubernetes notation: {@code "2"}, {@code "0.5"}, {@code "500m"}.
         *
         * @param cpu the CPU limit
         * @return this builder
         */
        public Builder cpu(String cpu) {
            this.cpu = Objects.requireNonNull(cpu, "cpu");
            return this;
        }

        /**
         * Limits the sandbox's memory, in Kubernetes notation: {@code "4Gi"}, {@code "512Mi"}.
         *
         * @param memory the memory limit
         * @return this builder
         */
        public Builder memory(String memory) {
            this.memory = Objects.requireNonNull(memory, "memory");
            return this;
        }

        /**
         * Adds environment variables that every process in the sandbox sees.
         *
         * @param variables names and values
         * @return this builder
         */
        public Builder env(Map<String, String> variables) {
            variables.forEach(this::env);
            return this;
        }

        /**
         * Adds an environment variable that every process in the sandbox sees.
         *
         * @param name  the variable's name
         * @param value its value
         * @return this builder
         */
        public Builder env(String name, String value) {
            env.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, () -> "value of " + name));
            secretEnv.remove(name);
            return this;
        }

        /**
         * Adds an environment variable whose value is a secret, read where the secret lives when the sandbox starts
         * (or, for a local secret, read here when it is created); see {@link Secret}.
         * <pre>{@code
         * Sandbox.builder().env("API_KEY", Secret.fromChalkEnv("MY_SECRET"))
         * }</pre>
         *
         * @param name   the variable's name
         * @param secret the secret giving its value: a Chalk secret, a local variable or one key of an integration
         * @return this builder
         * @throws IllegalArgumentException when the secret gives more than one value (use {@link #secrets})
         */
        public Builder env(String name, Secret secret) {
            new SecretBindings(
                    Map.of(
                            Objects.requireNonNull(name, "name"),
                            Objects.requireNonNull(secret, () -> "secret of " + name)),
                    List.of()); // checks the binding
            secretEnv.put(name, secret);
            env.remove(name);
            return this;
        }

        /**
         * Adds secrets that give each of their values under its own name: a Chalk secret or local variable under its
         * name, an integration under each selected key, a dotenv file under each of its keys. Usable together with
         * {@link #env(String, Secret)}.
         *
         * @param secrets the secrets
         * @return this builder
         */
        public Builder secrets(Secret... secrets) {
            return secrets(List.of(secrets));
        }

        /**
         * Adds secrets in bulk; see {@link #secrets(Secret...)}.
         *
         * @param secrets the secrets
         * @return this builder
         */
        public Builder secrets(List<Secret> secrets) {
            secrets.forEach(s -> bulkSecrets.add(Objects.requireNonNull(s, "secret")));
            return this;
        }

        /**
         * Names the sandbox, to find it in listings.
         *
         * @param name the name
         * @return this builder
         */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /**
         * Sets the sandbox's main process, replacing the image's entrypoint.
         *
         * @param entrypoint the program and its arguments
         * @return this builder
         */
        public Builder entrypoint(List<String> entrypoint) {
            entrypoint.forEach(e -> Objects.requireNonNull(e, "entrypoint must not contain null"));
            this.entrypoint = List.copyOf(entrypoint);
            return this;
        }

        /**
         * Gives the sandbox a workload identity of its environment: a token file the server rotates, named by
         * {@code CHALK_WEB_IDENTITY_TOKEN_FILE}, and the server's address in {@code CHALK_COMPUTE_TARGET}, so that
         * this SDK (or Chalk's Python SDK) running inside works with no configuration. The token acts in the
         * sandbox's environment only and is no longer accepted once the sandbox ends.
         *
         * @param chalkIdentity whether the sandbox gets an identity (default {@code false})
         * @return this builder
         */
        public Builder chalkIdentity(boolean chalkIdentity) {
            this.chalkIdentity = chalkIdentity;
            return this;
        }

        // ---- placement and lifecycle: lifetime, tags, workdir, snapshot, gpu, compute class ----

        /**
         * How long the sandbox may run: the server terminates it when this much time has passed since it was created,
         * whatever runs in it. Without it the server's maximum applies (a standalone server's
         * {@code --sandbox-lifetime}); a longer lifetime than the server allows is refused with an
         * {@code InvalidRequestException} naming the maximum.
         *
         * @param lifetime a positive duration, such as {@code Duration.ofHours(1)}
         * @return this builder
         */
        public Builder lifetime(Duration lifetime) {
            Objects.requireNonNull(lifetime, "lifetime");
            if (lifetime.isNegative() || lifetime.isZero()) {
                throw new IllegalArgumentException("lifetime must be positive, got " + lifetime);
            }
            this.lifetime = lifetime;
            return this;
        }

        /**
         * Labels the sandbox, to find it with {@link ListOptions#tag(String, String)}. Tags are kept with the
         * sandbox and shown in {@link SandboxInfo#tags()}.
         *
         * @param tags keys and values
         * @return this builder
         */
        public Builder tags(Map<String, String> tags) {
            tags.forEach(this::tag);
            return this;
        }

        /**
         * Labels the sandbox with key-value pairs given in turn: {@code tags("team", "search", "stage", "dev")}.
         *
         * @param keysAndValues an even number of strings: a key, its value, the next key, ...
         * @return this builder
         * @throws IllegalArgumentException when a key has no value
         */
        public Builder tags(String... keysAndValues) {
            if (keysAndValues.length % 2 != 0) {
                throw new IllegalArgumentException("tags takes keys and values in pairs; the key \""
                        + keysAndValues[keysAndValues.length - 1] + "\" has no value");
            }
            for (int i = 0; i < keysAndValues.length; i += 2) {
                tag(keysAndValues[i], keysAndValues[i + 1]);
            }
            return this;
        }

        /**
         * Labels the sandbox with one tag; see {@link #tags(Map)}.
         *
         * @param key   the tag's key, not blank
         * @param value its value
         * @return this builder
         */
        public Builder tag(String key, String value) {
            Objects.requireNonNull(key, "tag key");
            if (key.isBlank()) {
                throw new IllegalArgumentException("a tag key must not be blank");
            }
            tags.put(key, Objects.requireNonNull(value, () -> "value of tag " + key));
            return this;
        }

        /**
         * The directory commands run in when they do not set their own with {@link Command#workdir(String)}.
         * It applies to the commands run through the handle this definition becomes; a handle from
         * {@link SandboxClient#get(String)} or {@link SandboxClient#attach(String)} uses the image's directory.
         * The directory must exist (the default image's {@code /workspace} does; {@code /tmp} does everywhere).
         *
         * @param workdir an absolute path inside the sandbox
         * @return this builder
         */
        public Builder workdir(String workdir) {
            Objects.requireNonNull(workdir, "workdir");
            if (!workdir.startsWith("/")) {
                throw new IllegalArgumentException("workdir must be an absolute path, got \"" + workdir + "\"");
            }
            this.workdir = workdir;
            return this;
        }

        /**
         * Starts the sandbox from a snapshot ({@link Sandbox#snapshot()}): its files as they were, with the
         * settings of the sandbox the snapshot was taken of. Those settings cannot be changed, so a definition
         * with a snapshot sets nothing else but {@link #workdir(String)}.
         *
         * @param snapshotId a completed snapshot's id
         * @return this builder
         */
        public Builder snapshot(String snapshotId) {
            Objects.requireNonNull(snapshotId, "snapshotId");
            if (snapshotId.isBlank()) {
                throw new IllegalArgumentException("a snapshot id must not be blank");
            }
            this.snapshotId = snapshotId;
            return this;
        }

        /**
         * Asks for GPUs, in Kubernetes notation ({@code "1"}, {@code "nvidia-tesla-t4:1"}). A server without GPUs
         * for sandboxes (a standalone server) refuses the sandbox with a {@code FailedPreconditionException}
         * saying so, rather than start it without.
         *
         * @param gpu the GPU request
         * @return this builder
         */
        public Builder gpu(String gpu) {
            Objects.requireNonNull(gpu, "gpu");
            if (gpu.isBlank()) {
                throw new IllegalArgumentException("gpu must not be blank");
            }
            this.gpu = gpu;
            return this;
        }

        /**
         * Where the platform places the sandbox. A server that cannot place it so (a standalone server runs every
         * sandbox on its own host) refuses it with a {@code FailedPreconditionException} saying so.
         *
         * @param computeClass the compute class
         * @return this builder
         */
        public Builder computeClass(ComputeClass computeClass) {
            this.computeClass = Objects.requireNonNull(computeClass, "computeClass");
            return this;
        }

        private Placement placement() {
            if (snapshotId != null) {
                List<String> set = new ArrayList<>();
                if (image != null || imageSpec != null) {
                    set.add("image");
                }
                if (cpu != null) {
                    set.add("cpu");
                }
                if (memory != null) {
                    set.add("memory");
                }
                if (!env.isEmpty() || !secretEnv.isEmpty() || !bulkSecrets.isEmpty()) {
                    set.add("env/secrets");
                }
                if (name != null) {
                    set.add("name");
                }
                if (!entrypoint.isEmpty()) {
                    set.add("entrypoint");
                }
                if (!volumes.isEmpty()) {
                    set.add("mountVolume");
                }
                if (chalkIdentity) {
                    set.add("chalkIdentity");
                }
                if (lifetime != null) {
                    set.add("lifetime");
                }
                if (!tags.isEmpty()) {
                    set.add("tags");
                }
                if (gpu != null) {
                    set.add("gpu");
                }
                if (computeClass != null) {
                    set.add("computeClass");
                }
                if (!set.isEmpty()) {
                    throw new IllegalStateException("a sandbox started from snapshot " + snapshotId
                            + " runs with the settings of the sandbox the snapshot was taken of; remove "
                            + String.join(", ", set) + " from the definition");
                }
            }
            return new Placement(
                    lifetime,
                    Collections.unmodifiableMap(new LinkedHashMap<>(tags)),
                    workdir,
                    snapshotId,
                    gpu,
                    computeClass);
        }

        /**
         * What the sandbox may reach on the network; without a policy it has none (its own loopback only). See
         * {@link NetworkPolicy}.
         * <pre>{@code
         * Sandbox.builder().network(NetworkPolicy.allowlist("pypi.org", "*.pythonhosted.org"))
         * }</pre>
         *
         * @param policy the policy
         * @return this builder
         */
        public Builder network(NetworkPolicy policy) {
            this.network = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * Gives requests to {@code host} a credential the sandbox never holds: the variable named after the secret
         * holds a placeholder, which the egress proxy replaces by the secret's value in request headers to the host
         * only (see {@link Credential}). The host is allowed as well.
         * <pre>{@code
         * Sandbox.builder().addCredentials("api.openai.com", "OPENAI_API_KEY")
         * // in the sandbox: curl -H "Authorization: Bearer $OPENAI_API_KEY" https://api.openai.com/v1/models
         * }</pre>
         *
         * @param host       an exact name or a {@code *.} wildcard
         * @param secretName a Chalk secret of the environment; the variable of its name holds the placeholder
         * @return this builder
         */
        public Builder addCredentials(String host, String secretName) {
            return addCredentials(List.of(host), Secret.fromChalkEnv(secretName));
        }

        /**
         * As {@link #addCredentials(String, String)}, for a Chalk secret or a local variable.
         *
         * @param host   an exact name or a {@code *.} wildcard
         * @param secret {@link Secret#fromChalkEnv} or {@link Secret#fromLocalEnv}
         * @return this builder
         */
        public Builder addCredentials(String host, Secret secret) {
            return addCredentials(List.of(host), secret);
        }

        /**
         * As {@link #addCredentials(String, String)}, for several hosts.
         *
         * @param hosts      exact names or {@code *.} wildcards
         * @param secretName a Chalk secret of the environment
         * @return this builder
         */
        public Builder addCredentials(List<String> hosts, String secretName) {
            return addCredentials(hosts, Secret.fromChalkEnv(secretName));
        }

        /**
         * As {@link #addCredentials(String, String)}, for several hosts and a Chalk secret or a local variable.
         * <pre>{@code
         * .addCredentials(List.of("api.slack.com", "*.slack.com"), Secret.fromLocalEnv("SLACK_BOT_TOKEN"))
         * }</pre>
         *
         * @param hosts  exact names or {@code *.} wildcards
         * @param secret {@link Secret#fromChalkEnv} or {@link Secret#fromLocalEnv}
         * @return this builder
         */
        public Builder addCredentials(List<String> hosts, Secret secret) {
            credentials.add(new Credential(hosts, secret));
            return this;
        }

        /** The defined sandbox, not running yet; start it with {@link SandboxClient#run(Sandbox)}. */
        public Sandbox build() {
            for (Credential c : credentials) {
                if (env.containsKey(c.variable()) || secretEnv.containsKey(c.variable())) {
                    throw new IllegalArgumentException(c.variable() + " is set by env(...) and holds the placeholder of"
                            + " a credential; remove one of them");
                }
            }
            return new Sandbox(new Definition(
                    image,
                    imageSpec,
                    cpu,
                    memory,
                    Collections.unmodifiableMap(new LinkedHashMap<>(env)),
                    new SecretBindings(secretEnv, bulkSecrets),
                    name,
                    entrypoint,
                    List.copyOf(volumes),
                    chalkIdentity,
                    placement(),
                    network,
                    List.copyOf(credentials)));
        }
    }
}
