package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process started for a client: its output pumped into a sink, its stdin, signals and
 * timeout. {@link #done()} completes once the process has exited and all of its output has been
 * handed to the sink, so an exit event is never sent ahead of output.
 */
public final class ProcessRun {

    private static final Logger log = LoggerFactory.getLogger(ProcessRun.class);
    private static final int CHUNK = 64 * 1024;
    private static final AtomicInteger THREADS = new AtomicInteger();
    /** Pump threads block on pipes and on slow clients, so they get threads of their own. */
    private static final ExecutorService PUMPS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "chalk-exec-pump-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
    });

    private final RuntimeProcess process;
    private final CompletableFuture<RunResult> done = new CompletableFuture<>();
    private volatile boolean timedOut;
    private volatile ScheduledFuture<?> timer;
    private final Object stdinLock = new Object();
    private boolean stdinClosed;

    private ProcessRun(RuntimeProcess process) {
        this.process = process;
    }

    /**
     * Starts {@code spec} in {@code sandbox} and begins pumping its output into {@code sink}.
     *
     * @param timeout when present, the process and all of its children are killed after it
     */
    public static ProcessRun start(RuntimeSandbox sandbox, ProcessSpec spec, Optional<Duration> timeout,
                                   ScheduledExecutorService scheduler, OutputSink sink) throws ProcessStartException {
        ProcessRun run = new ProcessRun(sandbox.exec(spec));
        run.begin(timeout, scheduler, sink);
        return run;
    }

    private void begin(Optional<Duration> timeout, ScheduledExecutorService scheduler, OutputSink sink) {
        timeout.ifPresent(t -> timer = scheduler.schedule(this::expire, t.toMillis(), TimeUnit.MILLISECONDS));
        CompletableFuture<Void> out = pump(process.stdout(), process.pty() ? OutputStreamKind.PTY : OutputStreamKind.STDOUT, sink);
        CompletableFuture<Void> err = process.pty() ? CompletableFuture.completedFuture(null)
                : pump(process.stderr(), OutputStreamKind.STDERR, sink);
        process.onExit()
                .thenCombine(CompletableFuture.allOf(out, err), (status, ignored) -> status)
                .whenComplete((status, failure) -> {
                    ScheduledFuture<?> t = timer;
                    if (t != null) {
                        t.cancel(false);
                    }
                    if (failure != null) {
                        done.completeExceptionally(failure);
                    } else {
                        done.complete(new RunResult(status, timedOut));
                    }
                });
    }

    private CompletableFuture<Void> pump(InputStream in, OutputStreamKind kind, OutputSink sink) {
        return CompletableFuture.runAsync(() -> {
            byte[] buf = new byte[CHUNK];
            try (in) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    sink.output(kind, Arrays.copyOf(buf, n));
                }
            } catch (IOException e) {
                // a PTY reports EIO once the last writer is gone; that is its end of file
                log.debug("{} of pid {} ended: {}", kind, process.pid(), e.toString());
            }
        }, PUMPS);
    }

    private void expire() {
        timedOut = true;
        process.killTree();
    }

    /** The process id inside the sandbox. */
    public long pid() {
        return process.pid();
    }

    /** Writes to the process's stdin; blocks while its pipe is full. Ignored after {@link #closeStdin()}. */
    public void writeStdin(byte[] data) throws IOException {
        synchronized (stdinLock) {
            if (stdinClosed) {
                return;
            }
            OutputStream stdin = process.stdin();
            stdin.write(data);
            stdin.flush();
        }
    }

    /** Writes all of {@code data} to stdin and then closes it, without blocking the caller. */
    public void feedStdin(byte[] data) {
        CompletableFuture.runAsync(() -> {
            try {
                writeStdin(data);
            } catch (IOException e) {
                log.debug("stdin of pid {} closed early: {}", process.pid(), e.toString());
            } finally {
                closeStdin();
            }
        }, PUMPS);
    }

    /** Sends EOF to the process's stdin. */
    public void closeStdin() {
        synchronized (stdinLock) {
            if (stdinClosed) {
                return;
            }
            stdinClosed = true;
            try {
                process.stdin().close();
            } catch (IOException e) {
                log.debug("closing stdin of pid {}: {}", process.pid(), e.toString());
            }
        }
    }

    /** Delivers a signal to the process. */
    public void signal(int signal) {
        process.signal(signal);
    }

    /** Resizes the process's terminal. */
    public void resize(int cols, int rows) {
        process.resize(cols, rows);
    }

    /** Kills the process and everything it started. */
    public void kill() {
        process.killTree();
    }

    /** Whether the process is still running. */
    public boolean running() {
        return !done.isDone();
    }

    /** Completes after exit, once every byte of output has been handed to the sink. */
    public CompletableFuture<RunResult> done() {
        return done;
    }
}
