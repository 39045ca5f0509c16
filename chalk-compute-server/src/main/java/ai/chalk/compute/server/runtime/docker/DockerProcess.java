package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.host.ClosableStdin;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.ProcessTreeKill;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.host.PtyStdin;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A process started by {@link DockerSandbox#exec}: a Docker exec whose attach stream carries its stdin and output.
 *
 * <p><b>Pids and signals.</b> {@link #pid()} is the pid inside the container, as the process itself sees it (the
 * exec wrapper reports it before it becomes the command). When the engine runs on this host, the process's host pid
 * is known too (from the engine's exec inspection, checked against {@code /proc/<pid>/status}) and {@link #signal}
 * and {@link #killTree} act on the host; otherwise they run {@code kill} in another exec in the container.
 *
 * <p><b>Exit and output.</b> As in the local runtime, {@link #onExit()} completes once the process has exited
 * <em>and</em> each of {@link #stdout()} and {@link #stderr()} has been read to end-of-file or closed, or
 * {@value #LINGER_MILLIS} ms after the exit when a process it left behind still holds its output (the engine
 * itself ends such a stream two seconds after the exit). The exit is noticed by watching the host pid (every
 * {@code 50} ms) or by the end of the stream, whichever comes first; without host pids, only the latter, so such a
 * process ends about two seconds late. An exit code comes from the engine's exec inspection;
 * when this runtime delivered signal {@code n} and the code is {@code 128+n} (how the engine reports a process
 * killed by {@code n}), the status is {@link ExitStatus#signalled signalled(n)}. When the container went away
 * before the code could be read, the status is the signal that ended it ({@code signalled(9)} unless this
 * runtime delivered another one last); so is a process killed (status 137) because the container's init died, which
 * takes every process of the container with it.
 */
final class DockerProcess implements RuntimeProcess {

    private static final Logger log = LoggerFactory.getLogger(DockerProcess.class);
    static final long LINGER_MILLIS = 200;

    private final DockerSandbox sandbox;
    private final String execId;
    private final long pid;
    private final long hostPid;
    private final long hostStart;
    private final boolean pty;
    private final EngineConnection connection;
    private final ExecGroups.Group group;
    private final String description;
    private final OutputPipe stdout = new OutputPipe();
    private final OutputPipe stderr;
    private final OutputStream stdin;
    private final Set<Integer> delivered = ConcurrentHashMap.newKeySet();
    private volatile int lastDelivered;
    private final CompletableFuture<Void> streamEnded = new CompletableFuture<>();
    private final CompletableFuture<Void> hostExited = new CompletableFuture<>();
    private final CompletableFuture<ExitStatus> status = new CompletableFuture<>();
    private final CompletableFuture<ExitStatus> onExit;

    /**
     * @param hostPid   the process's pid on this host, or -1 when it is not visible here
     * @param hostStart its start time on the host (to tell it from a later process with the same pid)
     * @param group     its exec group, when exec groups are in use
     */
    DockerProcess(
            DockerSandbox sandbox,
            String execId,
            long pid,
            long hostPid,
            long hostStart,
            boolean pty,
            EngineConnection connection,
            ExecGroups.Group group,
            String description) {
        this.sandbox = sandbox;
        this.execId = execId;
        this.pid = pid;
        this.hostPid = hostPid;
        this.hostStart = hostStart;
        this.pty = pty;
        this.connection = connection;
        this.group = group;
        this.description = description;
        this.stderr = pty ? OutputPipe.empty() : new OutputPipe();
        this.stdin = pty ? new PtyStdin(connection.out()) : new PipeStdin(connection);
        CompletableFuture.anyOf(streamEnded, hostExited)
                .thenRunAsync(this::readExitStatus, sandbox.runtime().lastingExecutor());
        this.onExit = status.thenCompose(s -> CompletableFuture.allOf(stdout.eof, stderr.eof)
                .completeOnTimeout(null, LINGER_MILLIS, TimeUnit.MILLISECONDS)
                .thenApply(ignored -> s));
        this.onExit.whenComplete((s, e) -> {
            if (group != null) {
                group.removeIfEmpty();
            }
        });
    }

    /** Starts copying the attach stream to the output pipes; {@code early} is what was read before the exec began. */
    void start(byte[] earlyStdout, byte[] earlyStderr) {
        try {
            stdout.write(earlyStdout, 0, earlyStdout.length);
            if (!pty) {
                stderr.write(earlyStderr, 0, earlyStderr.length);
            }
        } catch (IOException e) {
            // interrupted: the reader below ends the streams
        }
        sandbox.runtime().helpers().execute(this::copyOutput);
    }

    private void copyOutput() {
        Thread.currentThread().setName("chalk-docker-output-" + execId.substring(0, Math.min(12, execId.length())));
        InputStream in = connection.in();
        byte[] buf = new byte[32 * 1024];
        try {
            if (pty) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    stdout.write(buf, 0, n);
                }
            } else {
                DataInputStream frames = new DataInputStream(in);
                EngineFrame frame;
                while ((frame = EngineFrame.next(frames)) != null) {
                    int size = frame.size();
                    OutputPipe to = frame.stderr() ? stderr : stdout;
                    while (size > 0) {
                        int n = frames.read(buf, 0, Math.min(size, buf.length));
                        if (n < 0) {
                            throw new EOFException("the output stream ended inside a frame");
                        }
                        to.write(buf, 0, n);
                        size -= n;
                    }
                }
            }
        } catch (IOException e) {
            log.debug("Output of {} ended: {}", description, e.toString());
        } finally {
            stdout.finish();
            stderr.finish();
            connection.close();
            Thread.currentThread().setName("chalk-docker-idle");
            streamEnded.complete(null);
        }
    }

    /** Reads the exit code from the engine once the process ended (the engine may take a moment to notice). */
    private void readExitStatus() {
        long pause = 1_000_000;
        long waited = 0;
        while (true) {
            DockerEngine.ExecState st;
            try {
                st = sandbox.engine().inspectExec(execId);
            } catch (RuntimeException e) {
                log.debug("Cannot read the exit code of {}: {}", description, e.toString());
                st = null;
            }
            if (st == null) { // the exec is gone with its container: killed by its removal
                int signal = lastDelivered;
                status.complete(ExitStatus.signalled(signal > 0 ? signal : 9));
                return;
            }
            if (!st.running() && st.exitCode() != null) {
                int code = st.exitCode();
                if (code == 137 && !delivered.contains(9) && sandbox.initDied()) {
                    // killed with everything else when the container's init died (SIGKILL to the whole namespace)
                    status.complete(ExitStatus.signalled(9));
                    return;
                }
                status.complete(status(code));
                return;
            }
            LockSupport.parkNanos(pause);
            waited += pause;
            pause = Math.min(pause * 2, waited > TimeUnit.SECONDS.toNanos(10) ? 1_000_000_000 : 20_000_000);
        }
    }

    private ExitStatus status(int code) {
        if (code > 128 && delivered.contains(code - 128)) {
            return ExitStatus.signalled(code - 128);
        }
        return ExitStatus.exited(code);
    }

    /** Called by the runtime's watcher when the host process is gone (while its output may still be held open). */
    void hostProcessExited() {
        hostExited.complete(null);
    }

    /** Whether the host process this runtime watches has ended; false when it is not visible here. */
    boolean hostProcessGone() {
        return hostPid > 0 && !Procfs.running(hostPid, hostStart);
    }

    boolean exited() {
        return status.isDone();
    }

    long hostPid() {
        return hostPid;
    }

    String execId() {
        return execId;
    }

    /** Records that the sandbox is about to deliver {@code signal} to this process (terminate). */
    void deliveredBySandbox(int signal) {
        delivered.add(signal);
        lastDelivered = signal;
    }

    /** After the container is gone: whatever the caller does not read any more must not hold the copying thread. */
    void abandonOutput() {
        stdout.finish();
        stderr.finish();
        connection.close();
    }

    @Override
    public long pid() {
        return pid;
    }

    @Override
    public OutputStream stdin() {
        return stdin;
    }

    @Override
    public InputStream stdout() {
        return stdout.input();
    }

    @Override
    public InputStream stderr() {
        return stderr.input();
    }

    @Override
    public boolean pty() {
        return pty;
    }

    @Override
    public void signal(int signal) {
        HostSignals.requireValid(signal);
        if (status.isDone()) {
            return;
        }
        delivered.add(signal);
        lastDelivered = signal;
        if (hostPid > 0) {
            if (Procfs.running(hostPid, hostStart)) {
                HostSignals.signal(hostPid, signal);
            }
        } else {
            sandbox.signalInside(pid, signal);
        }
    }

    @Override
    public void resize(int cols, int rows) {
        if (pty && !status.isDone()) {
            sandbox.engine().resizeExec(execId, cols, rows);
        }
    }

    @Override
    public void killTree() {
        delivered.add(HostSignals.SIGKILL);
        lastDelivered = HostSignals.SIGKILL;
        if (group != null) {
            if (!group.killAll(30_000)) {
                log.warn("Processes of {} survived SIGKILL for 30 s: {}", description, group.procs());
            }
            return;
        }
        if (hostPid > 0) {
            // no exec group: the process tree on the host is all there is to follow
            ProcessTreeKill.kill(() ->
                    Procfs.running(hostPid, hostStart) ? ProcessHandle.of(hostPid) : Optional.<ProcessHandle>empty());
            return;
        }
        if (!status.isDone()) {
            sandbox.killTreeInside(pid);
        }
    }

    @Override
    public CompletableFuture<ExitStatus> onExit() {
        return onExit;
    }

    @Override
    public String toString() {
        return description;
    }

    /** Stdin over a pipe: closing it half-closes the attach connection, and the engine closes the process's stdin. */
    private static final class PipeStdin extends ClosableStdin {
        private final EngineConnection connection;

        PipeStdin(EngineConnection connection) {
            super(connection.out());
            this.connection = connection;
        }

        @Override
        protected void end() {
            try {
                out.flush();
                connection.shutdownOutput();
            } catch (IOException e) {
                // the process is gone, and its stdin with it
            }
        }
    }
}
