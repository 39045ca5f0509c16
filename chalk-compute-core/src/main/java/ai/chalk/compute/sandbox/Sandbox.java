package ai.chalk.compute.sandbox;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A sandbox on a Chalk Compute server — an isolated environment in which you run commands — as a handle that is
 * always to a sandbox that exists: running, or ended. Define one with {@link #builder()} (a
 * {@link SandboxDefinition}) and start it with {@link SandboxClient#create(SandboxDefinition)}; find one with
 * {@link SandboxClient#get(String)} or {@link SandboxClient#attach(String)}.
 * <pre>{@code
 * SandboxDefinition definition = Sandbox.builder().image(Image.debianSlim()).cpu("2").memory("4Gi").build();
 * try (Sandbox sandbox = client.create(definition)) {
 *     ExecResult result = sandbox.exec("echo", "hello world");
 *     System.out.println(result.stdoutText());
 * } // terminated here
 * }</pre>
 *
 * <p>A sandbox is {@link AutoCloseable}: closing a sandbox this handle created terminates it, so
 * try-with-resources cleans up; closing a handle from {@link SandboxClient#get(String)} or
 * {@link SandboxClient#attach(String)} leaves the sandbox running unless you ask with {@link #terminateOnClose()}.
 *
 * <p>A handle holds the sandbox's id and the {@linkplain #info() last information fetched}; every operation asks the
 * server. Handles are thread-safe, and many commands can run in one sandbox at the same time.
 */
public final class Sandbox implements AutoCloseable {

    private final SandboxClient client;
    private final String id;
    private final String workdir; // the definition's, for a handle that created its sandbox; else null
    private volatile SandboxInfo info;
    private volatile boolean infoFetched;
    private volatile List<String> uploadedSecrets = List.of();
    private volatile boolean terminateOnClose;
    private volatile boolean closed;

    /**
     * A handle to a sandbox the client has just created from a definition: closing it terminates the sandbox, and the
     * managed secrets saved for its local secrets are deleted when it ends.
     */
    Sandbox(SandboxClient client, SandboxInfo info, String workdir, List<String> uploadedSecrets) {
        this.client = client;
        this.id = info.id();
        this.info = info;
        this.infoFetched = true;
        this.workdir = workdir;
        this.uploadedSecrets = List.copyOf(uploadedSecrets);
        this.terminateOnClose = true;
    }

    /** A handle to an existing sandbox, with its information. */
    Sandbox(SandboxClient client, SandboxInfo info) {
        this.client = client;
        this.id = info.id();
        this.info = info;
        this.infoFetched = true;
        this.workdir = null;
    }

    /** A handle known only by id: nothing is fetched until an operation needs the server. */
    Sandbox(SandboxClient client, String id) {
        this.client = client;
        this.id = id;
        this.info = new SandboxInfo(id, Optional.empty(), "UNKNOWN", null, Optional.empty(), Optional.empty());
        this.infoFetched = false;
        this.workdir = null;
    }

    /**
     * Starts a sandbox's definition: set its image, resources, environment, then {@code build()} it and pass it to
     * {@link SandboxClient#create(SandboxDefinition)}.
     *
     * @return a builder with nothing set: the server's default image and limits
     */
    public static SandboxDefinition.Builder builder() {
        return SandboxDefinition.builder();
    }

    /** The sandbox's id on the server. */
    public String id() {
        return id;
    }

    /**
     * What the server reported about the sandbox when it was last asked (at creation, lookup or
     * {@link #refresh()}); it is not fetched again, except once for a handle made by
     * {@link SandboxClient#attach(String)}, which has not asked yet.
     *
     * @return the information
     */
    public SandboxInfo info() {
        return infoFetched ? info : refresh();
    }

    /**
     * Fetches the sandbox's current information from the server, including whether it has terminated.
     *
     * @return the new information, also returned by {@link #info()} from now on
     * @throws ai.chalk.compute.error.SandboxNotFoundException when the server no longer knows the sandbox
     */
    public SandboxInfo refresh() {
        SandboxInfo fresh = client.fetch(id);
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
        client.terminate(id, null);
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
        client.terminate(id, gracePeriod);
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
        this.terminateOnClose = true;
        return this;
    }

    /**
     * Terminates the sandbox if this handle created it (or {@link #terminateOnClose()} was called), as
     * {@link #terminate()} does; otherwise leaves it running. A sandbox that has ended already is left as it is, and
     * closing twice does nothing the second time.
     */
    @Override
    public void close() {
        if (closed) {
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
        client.suspend(id);
    }

    /**
     * Lets the processes of a suspended sandbox continue, and it runs commands again. Resuming a running sandbox
     * does nothing.
     *
     * @throws ai.chalk.compute.error.FailedPreconditionException as {@link #suspend()}
     */
    public void resume() {
        client.resume(id);
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
        return client.snapshots().create(id, timeout);
    }

    /**
     * Starts a command as a resumable {@link Session}: it keeps running when the handle detaches, and its output
     * can be read again from another process with {@link Session#attach}. The sandbox's
     * {@linkplain SandboxDefinition.Builder#workdir(String) workdir} applies as for exec.
     *
     * @param command the command and its options
     * @return the session, attached
     * @throws ai.chalk.compute.error.FailedPreconditionException when the command cannot start
     */
    public Session session(Command command) {
        Objects.requireNonNull(command, "command");
        return Session.start(client, id, withWorkdir(command));
    }

    /**
     * The sessions started in this sandbox ({@link #session(Command)}), running and ended, to find one to re-attach
     * to.
     *
     * @return the sessions, as the server knows them now
     */
    public List<SessionInfo> sessions() {
        return client.sessions(id);
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
        return ai.chalk.compute.files.SandboxFiles.of(new SandboxExecTarget(this));
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
        return ai.chalk.compute.git.SandboxGit.of(new SandboxExecTarget(this));
    }

    private ExecCall startCall(Command command, boolean closeStdin) {
        Objects.requireNonNull(command, "command");
        return client.exec(id, withWorkdir(command), closeStdin);
    }

    /** The command, in the definition's workdir when it sets none of its own. */
    private Command withWorkdir(Command command) {
        return workdir != null && command.workdir().isEmpty() ? command.workdir(workdir) : command;
    }

    @Override
    public String toString() {
        SandboxInfo current = info;
        return "Sandbox[id=" + id + current.name().map(n -> ", name=" + n).orElse("")
                + (infoFetched ? ", state=" + current.state() : "") + "]";
    }
}
