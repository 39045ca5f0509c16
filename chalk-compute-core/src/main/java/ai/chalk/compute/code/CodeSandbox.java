package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.ListOptions;
import ai.chalk.compute.sandbox.Sandbox;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.sandbox.SandboxInfo;
import ai.chalk.compute.sandbox.Snapshot;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A sandbox that runs code snippets with state kept from one to the next, as code_sandboxes' {@code Sandbox}, on one
 * of its variants:
 *
 * <ul>
 *   <li>{@code chalk} (the default): a Chalk Compute sandbox (on the embedded server or a remote one). Python snippets
 *       run in one persistent interpreter inside the sandbox ({@code ExecutePython}); with {@link Language#JAVA}
 *       snippets run in one JShell state on the sandbox's JDK.
 *   <li>{@code docker}: a Jupyter server in a container on the Docker engine ({@link #create(Variant, SandboxConfig)}).
 *   <li>{@code eval}: a Jupyter server with a Python kernel as a plain local process, with no isolation at all.
 *   <li>{@code jupyter}: a kernel on any Jupyter server, by URL and token ({@link #connectJupyter}).
 * </ul>
 *
 * <pre>{@code
 * try (CodeSandbox sandbox = CodeSandbox.create(client, SandboxConfig.builder().timeout(Duration.ofSeconds(60)).build())) {
 *     sandbox.runCode("x = 1 + 1");
 *     System.out.println(sandbox.runCode("print(x)").stdout());   // 2
 *     System.out.println(sandbox.runCode("x * 21").text());       // 42
 *     sandbox.files().writeText("/tmp/data.txt", "Hello World");
 *     System.out.println(sandbox.commands().run("cat /tmp/data.txt").stdoutText());
 * } // terminated here
 * }</pre>
 *
 * <p>Results, files and commands have the same shape on every variant. Thread-safe; snippets of one sandbox run one
 * at a time, in the order they came.
 */
public final class CodeSandbox implements AutoCloseable {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(CodeSandbox.class);

    private final Variant variant;
    private final String id;
    private final @Nullable Sandbox sandbox;
    private final @Nullable SandboxClient ownedClient;
    private final @Nullable AutoCloseable backend;
    private final SnippetRunner runner;
    private final CodeFiles files;
    private final CodeCommands commands;
    private final boolean terminateOnClose;
    private final Language language;
    private final Snapshots snapshots;
    private volatile Optional<Duration> timeout;
    private volatile boolean closed;

    private CodeSandbox(
            Sandbox sandbox,
            SandboxClient client,
            @Nullable SandboxClient ownedClient,
            SandboxConfig config,
            boolean terminateOnClose) {
        this.variant = Variant.CHALK;
        this.id = sandbox.id();
        this.sandbox = sandbox;
        this.ownedClient = ownedClient;
        this.backend = null;
        this.terminateOnClose = terminateOnClose;
        this.language = config.language();
        this.timeout = config.timeout();
        this.snapshots = this::chalkSnapshot;
        this.runner = switch (config.language()) {
            case PYTHON -> new PythonRunner(client.channel(), sandbox.id());
            case JAVA -> new JShellRunner(sandbox, config.workingDir());
        };
        this.files = new SandboxCodeFiles(sandbox.files());
        this.commands = new CodeCommands(new SandboxCodeCommands(sandbox));
    }

    private CodeSandbox(
            Variant variant,
            String id,
            SnippetRunner runner,
            CodeFiles files,
            CodeCommands.Runner commands,
            @Nullable AutoCloseable backend,
            SandboxConfig config,
            Snapshots snapshots) {
        this.variant = variant;
        this.id = id;
        this.sandbox = null;
        this.ownedClient = null;
        this.backend = backend;
        this.terminateOnClose = true;
        this.language = config.language();
        this.timeout = config.timeout();
        this.snapshots = snapshots;
        this.runner = runner;
        this.files = files;
        this.commands = new CodeCommands(commands);
    }

    /**
     * The {@code jupyter} variant: a new Python kernel on the Jupyter server at {@code serverUrl} (started with
     * {@code jupyter server --ServerApp.token=TOKEN}, or any that {@code jupyter server list} shows), driven through
     * the Jupyter messaging protocol over WebSocket. The kernel runs in the server's root directory; files go through
     * the server's contents API (paths as the kernel sees them, under that root), commands through the kernel (they
     * wait while a snippet runs).
     * {@link #close()} shuts the kernel down. A snapshot keeps the kernel's variables in {@code chalk-snapshots/} of
     * the server's root ({@link SandboxConfig.Builder#snapshot(String)} on a kernel of the same server restores them).
     */
    public static CodeSandbox connectJupyter(java.net.URI serverUrl, String token, SandboxConfig config) {
        requirePython(Variant.JUPYTER, config);
        Optional<String> from = config.snapshot().map(CodeSandbox::snapshotKey);
        JupyterRunner runner = new JupyterRunner(serverUrl, token, "");
        CodeSandbox sandbox = new CodeSandbox(
                Variant.JUPYTER,
                runner.kernelId,
                runner,
                new JupyterFiles(runner, "", runner.kernelDirectory()),
                new KernelCommands(runner),
                null,
                config,
                (name, key) -> {
                    String path = JUPYTER_SNAPSHOTS + key + ".pickle";
                    NamespaceSnapshot saved = NamespaceSnapshot.save(runner, path);
                    return new CodeSnapshot(name, key, Variant.JUPYTER, saved, () -> runner.deleteFile(path));
                });
        return sandbox.restoring(from.map(key -> () -> {
            String path = JUPYTER_SNAPSHOTS + key + ".pickle";
            if (!runner.fileExists(path)) {
                throw new IllegalArgumentException("no snapshot " + key + " of the jupyter variant on " + serverUrl
                        + " (its variables would be in " + path + " of the server's root)");
            }
            return NamespaceSnapshot.restore(runner, path);
        }));
    }

    /**
     * Creates a sandbox of the {@code chalk} variant on the server {@link SandboxClient#fromEnv()} finds (closed with
     * this sandbox).
     */
    public static CodeSandbox create(SandboxConfig config) {
        return create(Variant.CHALK, config);
    }

    /**
     * Creates a sandbox of {@code variant}:
     *
     * <ul>
     *   <li>{@link Variant#CHALK}: on the server {@link SandboxClient#fromEnv()} finds.
     *   <li>{@link Variant#DOCKER}: a container of the image {@link SandboxConfig#environment()} names (by default
     *       {@code chalk-compute/jupyter:bookworm}, which {@code ci/build-test-images.sh jupyter} builds from Debian's
     *       packages) running a Jupyter server, on the engine {@code DOCKER_HOST} names; files and snippets run in
     *       its working directory ({@code /workspace} unless set), the memory and CPU limits apply; the container is
     *       removed on {@link #close()}.
     *   <li>{@link Variant#EVAL}: a Jupyter server with a Python kernel as a plain process of this machine
     *       ({@code jupyter-server} on the PATH, or {@code python3 -m jupyter_server}), in the working directory (a
     *       new temporary one, deleted on close, unless set). No isolation at all, logged at WARN: for development
     *       and trusted code only.
     *   <li>{@link Variant#JUPYTER} needs a server's URL and token: {@link #connectJupyter}.
     *   <li>{@link Variant#MODAL}, {@link Variant#COLAB}, {@link Variant#DATALAYER} are hosted services this SDK
     *       cannot reach: refused with an {@link UnsupportedOperationException} naming the variants that run.
     * </ul>
     */
    public static CodeSandbox create(Variant variant, SandboxConfig config) {
        switch (variant) {
            case CHALK -> {
                SandboxClient client = SandboxClient.fromEnv();
                try {
                    return new CodeSandbox(client.create(config.sandbox()), client, client, config, true)
                            .restoringChalk(config);
                } catch (RuntimeException e) {
                    client.close();
                    throw e;
                }
            }
            case EVAL -> {
                requirePython(variant, config);
                Optional<java.nio.file.Path> from =
                        config.snapshot().map(CodeSandbox::snapshotKey).map(LocalJupyter::snapshot);
                LocalJupyter local = LocalJupyter.start(config.workingDir(), config.env(), from);
                CodeSandbox sandbox = new CodeSandbox(
                        variant,
                        "eval-" + local.runner.kernelId,
                        local.runner,
                        new LocalFiles(local.workdir),
                        new LocalCommands(local.workdir, config.env()),
                        local,
                        config,
                        local::snapshot);
                return sandbox.restoring(from.map(dir -> () -> NamespaceSnapshot.restore(
                        local.runner, dir.resolve(LocalJupyter.NAMESPACE).toString())));
            }
            case DOCKER -> {
                requirePython(variant, config);
                requireDockerJava(CodeSandbox.class.getClassLoader());
                DockerJupyter docker = DockerJupyter.start(config);
                CodeSandbox sandbox = new CodeSandbox(
                        variant,
                        docker.containerId(),
                        docker.runner,
                        new JupyterFiles(docker.runner, docker.workdir.substring(1), "/"),
                        docker,
                        docker,
                        config,
                        (name, key) -> {
                            NamespaceSnapshot saved = NamespaceSnapshot.save(docker.runner, IN_SANDBOX_NAMESPACE);
                            try {
                                String image = docker.commit(name, key);
                                return new CodeSnapshot(
                                        name, image, Variant.DOCKER, saved, () -> DockerJupyter.removeImage(image));
                            } finally {
                                NamespaceSnapshot.remove(docker.runner, IN_SANDBOX_DIRECTORY);
                            }
                        });
                return sandbox.restoring(config.snapshot().map(image -> () -> sandbox.restoreInSandbox()));
            }
            default -> throw unsupported(variant);
        }
    }

    private static void requirePython(Variant variant, SandboxConfig config) {
        if (config.language() != Language.PYTHON) {
            throw new IllegalArgumentException("the " + variant.label()
                    + " variant runs Python kernels; JShell (Language.JAVA) runs in a chalk sandbox");
        }
    }

    /** The classes the docker variant needs, one of each of the two artifacts that bring them. */
    private static final List<String> DOCKER_JAVA = List.of(
            "com.github.dockerjava.core.DockerClientImpl", "com.github.dockerjava.httpclient5.ApacheDockerHttpClient");

    /**
     * docker-java is optional in this SDK (an application that only talks to a server does not get it): without it
     * the docker variant says which dependencies to add instead of failing later with a {@code NoClassDefFoundError}.
     */
    static void requireDockerJava(@Nullable ClassLoader loader) {
        for (String name : DOCKER_JAVA) {
            try {
                Class.forName(name, false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalStateException("the docker variant talks to the Docker engine with docker-java, which"
                        + " is not on the class path (" + name + " is missing): add the dependencies"
                        + " com.github.docker-java:docker-java-core and"
                        + " com.github.docker-java:docker-java-transport-httpclient5 (their version comes with"
                        + " ai.chalk.compute:chalk-compute-bom), or use another variant; " + Variant.RUNNING);
            }
        }
    }

    /** Creates a sandbox on {@code client}'s server; {@link #close()} terminates it. */
    public static CodeSandbox create(SandboxClient client, SandboxConfig config) {
        return new CodeSandbox(client.create(config.sandbox()), client, null, config, true).restoringChalk(config);
    }

    /**
     * Where chalk and docker sandboxes' interpreters write their variables for a snapshot: a file of the sandbox, so
     * that the server's snapshot (or the committed image) takes it with the other files; removed once taken.
     */
    private static final String IN_SANDBOX_DIRECTORY = "/tmp/.chalk-code-snapshot";

    private static final String IN_SANDBOX_NAMESPACE = IN_SANDBOX_DIRECTORY + "/namespace.pickle";

    /** Where a jupyter kernel keeps its snapshots' variables, relative to its directory (the server's root). */
    private static final String JUPYTER_SNAPSHOTS = "chalk-snapshots/";

    private static final java.util.regex.Pattern KEY = java.util.regex.Pattern.compile("[a-z0-9][a-z0-9_.-]{0,80}");

    /** How a variant takes a snapshot named {@code name}; {@code key} is fresh and safe in paths and image tags. */
    @FunctionalInterface
    interface Snapshots {
        CodeSnapshot take(String name, String key);
    }

    /** A snapshot's id where it names a directory or a file: no separators, nothing that climbs out. */
    private static String snapshotKey(String id) {
        if (!KEY.matcher(id).matches()) {
            throw new IllegalArgumentException("\"" + id + "\" is not a snapshot id of this variant (ids look like"
                    + " my-setup-1a2b3c4d, as CodeSnapshot.id() gives them)");
        }
        return id;
    }

    /** The chalk variant from a snapshot: its Python variables come back (JShell's state is not in snapshots). */
    private CodeSandbox restoringChalk(SandboxConfig config) {
        return restoring(
                config.snapshot().filter(s -> language == Language.PYTHON).map(s -> this::restoreInSandbox));
    }

    private NamespaceSnapshot restoreInSandbox() {
        try {
            return NamespaceSnapshot.restore(runner, IN_SANDBOX_NAMESPACE);
        } finally {
            NamespaceSnapshot.remove(runner, IN_SANDBOX_DIRECTORY);
        }
    }

    /** Restores a snapshot's variables into the new interpreter; a sandbox that cannot is closed, not leaked. */
    private CodeSandbox restoring(Optional<java.util.function.Supplier<NamespaceSnapshot>> restore) {
        if (restore.isEmpty()) {
            return this;
        }
        try {
            NamespaceSnapshot restored = restore.get().get();
            if (!restored.skipped().isEmpty()) {
                LOG.warn(
                        "{}: the snapshot's {} could not be restored (defined again by the next snippets)",
                        this,
                        restored.skipped());
            }
            return this;
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /**
     * A running sandbox by id (one this or another program created): {@link #close()} leaves it running. Its Python
     * interpreter is the one earlier snippets used, with their state.
     */
    public static CodeSandbox fromId(SandboxClient client, String id) {
        return fromId(client, id, SandboxConfig.defaults());
    }

    /** As {@link #fromId(SandboxClient, String)}, with the language and timeout of {@code config}. */
    public static CodeSandbox fromId(SandboxClient client, String id, SandboxConfig config) {
        Sandbox sandbox = client.get(id);
        return new CodeSandbox(sandbox, client, null, config, false);
    }

    /** The running sandboxes of {@code client}'s environment. */
    public static List<SandboxInfo> list(SandboxClient client) {
        return client.listAll(ListOptions.defaults());
    }

    private static UnsupportedOperationException unsupported(Variant variant) {
        String why = switch (variant) {
            case MODAL, COLAB, DATALAYER -> "is a hosted service this SDK cannot reach";
            case JUPYTER -> "needs its server: use CodeSandbox.connectJupyter(serverUrl, token, config)";
            default -> "is not available in this version of the SDK";
        };
        return new UnsupportedOperationException("variant " + variant.label() + " " + why + "; " + Variant.RUNNING);
    }

    /** The variant this sandbox runs on. */
    public Variant variant() {
        return variant;
    }

    /**
     * The sandbox's id: the chalk sandbox's, the docker container's, the jupyter kernel's, or {@code eval-} and the
     * local kernel's.
     */
    public String id() {
        return id;
    }

    /** The chalk {@link Sandbox} underneath, for everything else a sandbox does (the chalk variant only). */
    public Sandbox sandbox() {
        Sandbox s = sandbox;
        if (s == null) {
            throw new UnsupportedOperationException("a " + variant.label() + " code sandbox has no Chalk sandbox"
                    + " underneath: runCode, files() and commands() work on every variant, snapshots and the"
                    + " Sandbox API need the chalk variant");
        }
        return s;
    }

    /** Runs a snippet and waits for its result; state (variables, imports) carries over to the next snippet. */
    public ExecutionResult runCode(String code) {
        return runCode(code, RunOptions.defaults());
    }

    /** Runs a snippet with callbacks for its output as it comes, a timeout, chart capture and an artifact limit. */
    public ExecutionResult runCode(String code, RunOptions options) {
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(options, "options");
        if (closed) {
            throw new IllegalStateException("this code sandbox is closed");
        }
        return runner.run(code, options, timeout);
    }

    /**
     * Interrupts the snippet running now (from another thread): a {@code KeyboardInterrupt} in Python, a stopped
     * evaluation in JShell. The state is kept.
     */
    public void interrupt() {
        runner.interrupt();
    }

    /** Reads, writes and lists the sandbox's files (see {@link CodeFiles} for where they are on each variant). */
    public CodeFiles files() {
        return files;
    }

    /** Runs shell commands in the sandbox (see {@link CodeCommands} for where they run on each variant). */
    public CodeCommands commands() {
        return commands;
    }

    /** Sets the default timeout of each {@code runCode} from now on. */
    public void setTimeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        this.timeout = Optional.of(timeout);
    }

    /**
     * Snapshots the sandbox's state, as code_sandboxes' {@code create_snapshot}: its files and the Python interpreter's
     * variables (imported modules, functions defined by snippets, every value pickle can write; see
     * {@link CodeSnapshot} for where each variant keeps them). Waits until the snapshot is complete and must not run
     * while a snippet runs (it is one). Start a sandbox of the same variant from it with
     * {@link SandboxConfig.Builder#snapshot(String)} and {@link CodeSnapshot#id()}.
     */
    public CodeSnapshot createSnapshot(String name) {
        Objects.requireNonNull(name, "name");
        if (closed) {
            throw new IllegalStateException("this code sandbox is closed");
        }
        String slug = name.toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9_.-]+", "-");
        slug = slug.replaceAll("^[^a-z0-9]+", "");
        if (slug.length() > 40) {
            slug = slug.substring(0, 40);
        }
        String key = (slug.isEmpty() ? "snapshot" : slug) + "-"
                + java.util.HexFormat.of()
                        .formatHex(java.nio.ByteBuffer.allocate(4)
                                .putInt(new java.security.SecureRandom().nextInt())
                                .array());
        return snapshots.take(name, key);
    }

    /** The chalk variant's snapshot: the server's, with the interpreter's variables in a file of the sandbox. */
    private CodeSnapshot chalkSnapshot(String name, String key) {
        Sandbox chalk = sandbox();
        if (language != Language.PYTHON) {
            Snapshot files = chalk.snapshot();
            return new CodeSnapshot(name, files.id(), variant, NamespaceSnapshot.none(), files::delete);
        }
        NamespaceSnapshot saved = NamespaceSnapshot.save(runner, IN_SANDBOX_NAMESPACE);
        try {
            Snapshot files = chalk.snapshot();
            return new CodeSnapshot(name, files.id(), variant, saved, files::delete);
        } finally {
            NamespaceSnapshot.remove(runner, IN_SANDBOX_DIRECTORY);
        }
    }

    /**
     * Terminates the sandbox, giving its processes the server's grace period (chalk); shuts the kernel down and
     * removes the container (docker) or stops the local server (eval).
     */
    public void terminate() {
        runner.close();
        if (sandbox != null) {
            sandbox.terminate();
        }
        closeBackend();
    }

    /** Terminates the sandbox at once: its processes are killed without a grace period. */
    public void kill() {
        runner.close();
        if (sandbox != null) {
            sandbox.terminate(Duration.ZERO);
        }
        closeBackend();
    }

    private void closeBackend() {
        if (backend != null) {
            try {
                backend.close();
            } catch (Exception e) {
                throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
            }
        }
    }

    /** Terminates the sandbox if this handle created it, and closes the client it made for itself. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            runner.close();
            if (terminateOnClose && sandbox != null) {
                sandbox.terminate();
            }
            closeBackend();
        } finally {
            if (ownedClient != null) {
                ownedClient.close();
            }
        }
    }

    @Override
    public String toString() {
        return "CodeSandbox[" + variant.label() + " " + id + "]";
    }
}
