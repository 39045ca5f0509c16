package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.host.HostSignals;
import ai.chalk.compute.server.runtime.host.OutputPipes;
import ai.chalk.compute.server.runtime.host.ProcessTreeKill;
import ai.chalk.compute.server.runtime.host.Procfs;
import ai.chalk.compute.server.runtime.host.PtyStdin;
import ai.chalk.compute.server.runtime.local.cgroup.ProcessGroup;
import com.pty4j.PtyProcess;
import com.pty4j.WinSize;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A process started by {@link LocalSandbox#exec}. In an isolated sandbox the host process is {@code nsenter},
 * whose child is the real command inside the sandbox's namespaces; {@link #pid()} and {@link #signal} address that
 * child. Without isolation the host process is the command itself.
 *
 * <p><b>Exit and output.</b> {@link #onExit()} completes once the process has exited <em>and</em> each of
 * {@link #stdout()} and {@link #stderr()} has been read to end-of-file or closed by the caller, so a caller that
 * drains both streams (as it must: an unread pipe blocks the process) sees every byte before the exit status.
 * When a stream does not reach end-of-file within {@value #LINGER_MILLIS} ms of the exit, because a process the
 * command left behind (a daemon) still holds it open or nobody reads it, {@code onExit()} completes anyway; the
 * stream stays readable. Exit statuses: a command that exited reports its code; when this runtime delivered
 * signal {@code n} to the process (through {@link #signal}, {@link #killTree} or the sandbox's terminate) and it
 * ended with status {@code 128+n} (which is how {@code nsenter} passes on a child killed by {@code n}), the
 * status is {@link ExitStatus#signalled signalled(n)}; any other status is reported as the exit code it is.
 */
final class LocalProcess implements RuntimeProcess {

    private static final Logger log = LoggerFactory.getLogger(LocalProcess.class);
    static final long LINGER_MILLIS = 200;
    private static final long PID_LOOKUP_MILLIS = 5_000;

    /** The real command's pid on the host and inside the sandbox; -1 when it ended before it could be read. */
    record Pids(long host, long inner) {
        static final Pids UNKNOWN = new Pids(-1, -1);
    }

    private final Process process;
    private final boolean pty;
    private final ProcessGroup group;
    private final Set<Integer> delivered = ConcurrentHashMap.newKeySet();
    private final CompletableFuture<Pids> pids;
    private final Tracked stdout;
    private final Tracked stderr;
    private final OutputStream stdin;
    private final CompletableFuture<ExitStatus> onExit;
    private final String description;
    private final boolean spare;

    /**
     * @param process the host process
     * @param output  its output's read ends ({@link OutputPipes}; a PTY's master and nothing)
     * @param pty     whether it runs on a PTY
     * @param group   its pids group, if the pids controller is in use
     * @param pids    where the real command is, from {@link #findCommand} or known
     * @param spare   whether a spare exec helper became this process
     * @param helpers where the exec's pids group is removed once it is over
     */
    LocalProcess(
            Process process,
            OutputPipes.Readers output,
            boolean pty,
            ProcessGroup group,
            CompletableFuture<Pids> pids,
            String description,
            boolean spare,
            Executor helpers) {
        this.spare = spare;
        this.process = process;
        this.pty = pty;
        this.group = group;
        this.pids = pids;
        this.description = description;
        this.stdout = pty
                ? new Tracked(new SettledPtyOutput(output.stdout(), process), false)
                : new Tracked(output.stdout(), true);
        this.stderr = pty ? Tracked.empty() : new Tracked(output.stderr(), true);
        this.stdin = pty ? new PtyStdin(process.getOutputStream()) : process.getOutputStream();
        this.onExit = process.onExit()
                .thenApply(p -> status(p.exitValue()))
                .thenCompose(status -> CompletableFuture.allOf(stdout.eof, stderr.eof)
                        .completeOnTimeout(null, LINGER_MILLIS, TimeUnit.MILLISECONDS)
                        .thenApply(ignored -> status));
        if (group != null) {
            // not on the thread that completes the exit, which may be the caller reading the last byte of output: a
            // cgroup's removal takes the kernel's cgroup locks, and the caller's next exec should not wait for them
            this.onExit.whenCompleteAsync((s, e) -> group.removeIfEmpty(), helpers);
        }
    }

    /** Where the real command of {@code process} is: itself without isolation, else nsenter's child. */
    static CompletableFuture<Pids> pidsOf(Process process, boolean nsentered, ProcessGroup group, Executor helpers) {
        if (!nsentered) {
            return CompletableFuture.completedFuture(new Pids(process.pid(), process.pid()));
        }
        return CompletableFuture.supplyAsync(() -> findCommand(process, group), helpers);
    }

    /**
     * Where the spare exec helper {@code process} (see {@link SandboxCommands#SPARE_SCRIPT}) waits, once it has said it
     * is ready ({@link SandboxCommands#SPARE_READY} on its stderr, which nothing else writes before its request): a
     * thread waits for that byte, no polling meanwhile, which on a busy host took CPU from the execs running. Unknown
     * when it ended or said anything else (nsenter's complaint, say): the helper is then not used.
     */
    static CompletableFuture<Pids> spareReady(
            Process process, InputStream stderr, boolean nsentered, ProcessGroup group, Executor helpers) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        if (stderr.read() != SandboxCommands.SPARE_READY) {
                            return Pids.UNKNOWN;
                        }
                    } catch (IOException e) {
                        return Pids.UNKNOWN;
                    }
                    // the helper runs, so nsenter's child is there: found at the first look
                    return nsentered ? findCommand(process, group, 0) : new Pids(process.pid(), process.pid());
                },
                helpers);
    }

    /** Finds nsenter's child, the real command, and reads its pid inside the sandbox. */
    private static Pids findCommand(Process process, ProcessGroup group) {
        // nsenter needs a few hundred microseconds to exec and enter the namespaces before it forks
        return findCommand(process, group, 300_000);
    }

    private static Pids findCommand(Process process, ProcessGroup group, long firstWaitNanos) {
        long nsenter = process.pid();
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(PID_LOOKUP_MILLIS);
        if (firstWaitNanos > 0) {
            LockSupport.parkNanos(firstWaitNanos);
        }
        while (System.nanoTime() < deadline) {
            List<Long> candidates = group != null
                    ? group.procs()
                    : ProcessHandle.of(nsenter)
                            .map(h -> h.children().map(ProcessHandle::pid).collect(Collectors.toList()))
                            .orElse(List.of());
            for (long c : candidates) {
                if (c != nsenter && Procfs.parentPid(c) == nsenter) {
                    long inner = Procfs.innermostPid(c);
                    if (inner > 0 && Procfs.parentPid(c) == nsenter) {
                        return new Pids(c, inner);
                    }
                }
            }
            if (!process.isAlive()) {
                return Pids.UNKNOWN;
            }
            LockSupport.parkNanos(System.nanoTime() - start < 20_000_000 ? 100_000 : 2_000_000);
        }
        return Pids.UNKNOWN;
    }

    private Pids pids() {
        try {
            return pids.get(PID_LOOKUP_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Pids.UNKNOWN;
        } catch (ExecutionException | TimeoutException e) {
            return Pids.UNKNOWN;
        }
    }

    private ExitStatus status(int code) {
        if (code > 128 && delivered.contains(code - 128)) {
            return ExitStatus.signalled(code - 128);
        }
        if (code < 0 && delivered.contains(-code)) {
            return ExitStatus.signalled(-code);
        }
        return ExitStatus.exited(code);
    }

    /**
     * The pid inside the sandbox (the host pid without isolation); -1 when the command ended before its pid could
     * be read.
     */
    @Override
    public long pid() {
        return pids().inner();
    }

    /** The real command's pid on the host; -1 when unknown. */
    long hostPid() {
        return pids().host();
    }

    /** Whether a spare exec helper became this process (rather than a chain started for it). */
    boolean viaSpare() {
        return spare;
    }

    /** The host process this runtime started ({@code nsenter}, or the command itself without isolation). */
    Process hostProcess() {
        return process;
    }

    @Override
    public OutputStream stdin() {
        return stdin;
    }

    @Override
    public InputStream stdout() {
        return stdout;
    }

    @Override
    public InputStream stderr() {
        return stderr;
    }

    @Override
    public boolean pty() {
        return pty;
    }

    @Override
    public void signal(int signal) {
        HostSignals.requireValid(signal);
        if (!process.isAlive()) {
            return;
        }
        Pids p = pids();
        if (p.host() <= 0 || !process.isAlive()) {
            return; // the command is gone (nsenter is about to report its status)
        }
        delivered.add(signal);
        HostSignals.signal(p.host(), signal);
    }

    /** The real command's host pid if already known, else -1; never waits. */
    long knownHostPid() {
        Pids p = pids.getNow(Pids.UNKNOWN);
        return p == null ? -1 : p.host();
    }

    /** Records that the sandbox's terminate is about to deliver {@code signal} to this process. */
    void deliveredBySandbox(int signal) {
        delivered.add(signal);
    }

    @Override
    public void resize(int cols, int rows) {
        if (pty && process.isAlive()) {
            ((PtyProcess) process).setWinSize(new WinSize(cols, rows));
        }
    }

    @Override
    public void killTree() {
        delivered.add(9);
        if (group != null) {
            if (!group.killAll(30_000)) {
                log.warn("Processes of {} survived SIGKILL for 30 s: {}", description, group.procs());
            }
            return;
        }
        // no pids cgroup: the process tree is all there is to follow
        ProcessTreeKill.kill(() -> ProcessHandle.of(process.pid()));
    }

    @Override
    public CompletableFuture<ExitStatus> onExit() {
        return onExit;
    }

    @Override
    public String toString() {
        return description;
    }

    /**
     * A PTY's output whose end is believed only once the terminal has settled: pty4j stops its reads the moment it has
     * reaped the process (it wakes its poll through a pipe and then reads only while the master is readable), which
     * can come before the kernel has moved the command's last bytes from the terminal's buffer to the master (a
     * worker thread of the kernel does it; on a loaded host, later). An end seen after the exit is looked at again
     * for {@link #SETTLE_MILLIS}; bytes that turn up are returned, and the end is looked at again after them.
     */
    static final class SettledPtyOutput extends FilterInputStream {
        static final long SETTLE_MILLIS = 60;

        private final Process process;

        SettledPtyOutput(InputStream in, Process process) {
            super(in);
            this.process = process;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n != -1 || process.isAlive()) {
                return n;
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_MILLIS);
            while (System.nanoTime() < deadline) {
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return -1;
                }
                n = super.read(b, off, len);
                if (n > 0) {
                    return n;
                }
            }
            return -1;
        }
    }

    /**
     * An output stream whose end (EOF, an error such as a PTY's EIO, or close) is observable. A pipe's read end is
     * closed at its end of file, so that a reader who never closes it (it read to the end) holds no descriptor; a
     * terminal's is left to its process, whose stdin shares it.
     */
    static final class Tracked extends FilterInputStream {
        final CompletableFuture<Void> eof = new CompletableFuture<>();
        private final boolean closeAtEnd;

        Tracked(InputStream in, boolean closeAtEnd) {
            super(in);
            this.closeAtEnd = closeAtEnd;
        }

        static Tracked empty() {
            Tracked t = new Tracked(InputStream.nullInputStream(), false);
            t.eof.complete(null);
            return t;
        }

        private void ended() {
            if (closeAtEnd) {
                try {
                    in.close();
                } catch (IOException e) {
                    // closed all the same
                }
                in = InputStream.nullInputStream(); // later reads see the end again
            }
            eof.complete(null);
        }

        @Override
        public int read() throws IOException {
            try {
                int b = super.read();
                if (b < 0) {
                    ended();
                }
                return b;
            } catch (IOException e) {
                eof.complete(null);
                throw e;
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                int n = super.read(b, off, len);
                if (n < 0) {
                    ended();
                }
                return n;
            } catch (IOException e) {
                eof.complete(null);
                throw e;
            }
        }

        @Override
        public void close() throws IOException {
            try {
                super.close();
            } finally {
                eof.complete(null);
            }
        }
    }
}
