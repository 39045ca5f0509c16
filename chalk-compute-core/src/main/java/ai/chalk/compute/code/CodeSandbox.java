package ai.chalk.compute.code;

import ai.chalk.compute.files.SandboxFiles;
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
 * A sandbox that runs code snippets with state kept from one to the next, as code_sandboxes' {@code Sandbox}: the
 * {@code chalk} variant, a Chalk Compute sandbox (on the embedded server or a remote one). Python snippets run in
 * one persistent interpreter inside the sandbox ({@code ExecutePython}); with {@link Language#JAVA} snippets run in
 * one JShell state on the sandbox's JDK.
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
 * <p>It delegates to a {@link Sandbox}: files, commands, snapshots and termination are that sandbox's. Thread-safe;
 * snippets of one sandbox run one at a time, in the order they came.
 */
public final class CodeSandbox implements AutoCloseable {

    private final @Nullable Sandbox sandbox;
    private final @Nullable SandboxClient ownedClient;
    private final SnippetRunner runner;
    private final boolean terminateOnClose;
    private volatile Optional<Duration> timeout;
    private volatile boolean closed;

    private CodeSandbox(
            Sandbox sandbox,
            SandboxClient client,
            @Nullable SandboxClient ownedClient,
            SandboxConfig config,
            boolean terminateOnClose) {
        this.sandbox = sandbox;
        this.ownedClient = ownedClient;
        this.terminateOnClose = terminateOnClose;
        this.timeout = config.timeout();
        this.runner = switch (config.language()) {
            case PYTHON -> new PythonRunner(client.channel(), sandbox.id());
            case JAVA -> new JShellRunner(sandbox, config.workingDir());
        };
    }

    private CodeSandbox(SnippetRunner runner, SandboxConfig config) {
        this.sandbox = null;
        this.ownedClient = null;
        this.terminateOnClose = false;
        this.timeout = config.timeout();
        this.runner = runner;
    }

    /**
     * The {@code jupyter} variant: a new Python kernel on the Jupyter server at {@code serverUrl} (started with
     * {@code jupyter server --ServerApp.token=TOKEN}, or any that {@code jupyter server list} shows), driven through
     * the Jupyter messaging protocol over WebSocket. {@link #close()} shuts the kernel down. Files, commands and
     * snapshots belong to sandboxes: this variant runs code only.
     */
    public static CodeSandbox connectJupyter(java.net.URI serverUrl, String token, SandboxConfig config) {
        if (config.language() != Language.PYTHON) {
            throw new IllegalArgumentException(
                    "the jupyter variant runs Python kernels; JShell runs in a chalk sandbox");
        }
        return new CodeSandbox(new JupyterRunner(serverUrl, token), config);
    }

    /**
     * Creates a sandbox of the {@code chalk} variant on the server {@link SandboxClient#fromEnv()} finds (closed with
     * this sandbox).
     */
    public static CodeSandbox create(SandboxConfig config) {
        return create(Variant.CHALK, config);
    }

    /**
     * Creates a sandbox of {@code variant}. Only {@link Variant#CHALK} runs in this version; the others are refused
     * with an {@link UnsupportedOperationException} that says which runs.
     */
    public static CodeSandbox create(Variant variant, SandboxConfig config) {
        if (variant != Variant.CHALK) {
            throw unsupported(variant);
        }
        SandboxClient client = SandboxClient.fromEnv();
        try {
            return new CodeSandbox(client.create(config.sandbox()), client, client, config, true);
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    /** Creates a sandbox on {@code client}'s server; {@link #close()} terminates it. */
    public static CodeSandbox create(SandboxClient client, SandboxConfig config) {
        return new CodeSandbox(client.create(config.sandbox()), client, null, config, true);
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
        return new UnsupportedOperationException(
                "variant " + variant.label() + " " + why + "; the variants that run here are chalk (a Chalk Compute"
                        + " sandbox, on the embedded server or a remote one) and jupyter (connectJupyter)");
    }

    /** The sandbox's id. */
    public String id() {
        return sandbox().id();
    }

    /** The {@link Sandbox} underneath, for everything else a sandbox does. */
    public Sandbox sandbox() {
        Sandbox s = sandbox;
        if (s == null) {
            throw new UnsupportedOperationException(
                    "a jupyter kernel has no sandbox: files, commands and snapshots need the chalk variant");
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

    /** Reads, writes and lists files in the sandbox. */
    public SandboxFiles files() {
        return sandbox().files();
    }

    /** Runs shell commands in the sandbox. */
    public CodeCommands commands() {
        return new CodeCommands(sandbox());
    }

    /** Sets the default timeout of each {@code runCode} from now on. */
    public void setTimeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        this.timeout = Optional.of(timeout);
    }

    /**
     * Snapshots the sandbox's files, waiting until the snapshot is complete. Start a sandbox from it with
     * {@link SandboxConfig.Builder#snapshot(String)}.
     */
    public CodeSnapshot createSnapshot(String name) {
        Snapshot snapshot = sandbox().snapshot();
        return new CodeSnapshot(name, snapshot);
    }

    /** Terminates the sandbox, giving its processes the server's grace period. */
    public void terminate() {
        runner.close();
        if (sandbox != null) {
            sandbox.terminate();
        }
    }

    /** Terminates the sandbox at once: its processes are killed without a grace period. */
    public void kill() {
        runner.close();
        if (sandbox != null) {
            sandbox.terminate(Duration.ZERO);
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
        } finally {
            if (ownedClient != null) {
                ownedClient.close();
            }
        }
    }

    @Override
    public String toString() {
        return sandbox == null ? "CodeSandbox[jupyter]" : "CodeSandbox[" + sandbox.id() + "]";
    }
}
