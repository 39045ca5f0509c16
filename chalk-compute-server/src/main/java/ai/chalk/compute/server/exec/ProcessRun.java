package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.threads.DaemonThreads;
import ai.chalk.compute.server.threads.EnvironmentShares;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process started for a client: its output pumped into a sink, its stdin, signals and
 * timeout. {@link #done()} completes once the process has exited and all of its output has been
 * handed to the sink, so an exit event is never sent ahead of output.
 */
public final class ProcessRun {

    private static final Logger log = LoggerFactory.getLogger(ProcessRun.class);
    /**
     * The most bytes handed to the sink at once: a few pipe-fulls, so a fast producer costs few messages (each has a
     * fixed cost in gRPC), well under gRPC's 4 MiB default message limit.
     */
    static final int CHUNK = 256 * 1024;
    /**
     * What a pump reads into while its command writes nothing yet, or little: a command that waits (a server, a
     * {@code sleep}) holds this much of the heap per output, not a chunk's worth; a full read means output flows, and
     * the next read takes a whole chunk, until a read smaller than this says it slowed down again.
     */
    static final int FIRST_READ = 8 * 1024;
    /** How long after a chunk went out a partial one may wait for more of a fast command's output. */
    static final Duration COALESCE = Duration.ofMillis(1);
    /** How often a partial chunk looks whether the command wrote more (see {@link Pump#gather}). */
    static final Duration COALESCE_POLL = Duration.ofNanos(100_000);

    private final RuntimeProcess process;
    private final CompletableFuture<RunResult> done = new CompletableFuture<>();
    /** How long a pump may wait for data after the command exited before the run ends without it. */
    static final Duration LINGER = Duration.ofMillis(300);

    private volatile boolean timedOut;
    private volatile ScheduledFuture<?> timer;
    private volatile ProcessThreads threads;
    private final List<Pump> pumps = new CopyOnWriteArrayList<>();
    private final ExecutorService stdinWriter =
            Executors.newSingleThreadExecutor(DaemonThreads.numbered("chalk-exec-stdin"));
    private final java.util.concurrent.atomic.AtomicLong pendingStdin = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean stdinClosed;
    private volatile long exitSeenAt;
    private final java.util.concurrent.atomic.AtomicBoolean pumpsWatched =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** The command's place among the server's running commands, given back once its threads are free. */
    private final EnvironmentShares.Place place;
    /** The last task given to {@link #stdinWriter}, which runs them in order (guarded by this). */
    private CompletableFuture<Void> lastStdinTask = CompletableFuture.completedFuture(null);

    private ProcessRun(RuntimeProcess process, EnvironmentShares.Place place) {
        this.process = process;
        this.place = place;
    }

    /**
     * Starts {@code spec} in {@code sandbox} and begins pumping its output into {@code sink}. The command holds a place
     * among the server's running commands ({@link RunningCommands}) for as long as it holds server threads: until its
     * run is done and its output and stdin threads are free, which a process it left running in the background, still
     * holding its output or stdin, delays until that process ends or closes them.
     *
     * @param environment whose command it is: one environment runs at most its share of the server's commands
     * @param timeout     when present, the process and all of its children are killed after it
     * @throws ai.chalk.compute.server.error.ComputeException (RESOURCE_EXHAUSTED) when the environment or the server
     *     runs as many commands as it may; nothing is started then
     */
    public static ProcessRun start(
            RuntimeSandbox sandbox,
            String environment,
            ProcessSpec spec,
            Optional<Duration> timeout,
            ProcessThreads threads,
            OutputSink sink)
            throws ProcessStartException {
        EnvironmentShares.Place place = threads.commands().take(environment);
        ProcessRun run;
        try {
            run = new ProcessRun(sandbox.exec(spec), place);
        } catch (ProcessStartException | RuntimeException | Error e) {
            place.close();
            throw e;
        }
        try {
            run.begin(timeout, threads, sink);
        } catch (RuntimeException | Error e) {
            // no thread could be had (the server closing, or out of memory): the caller gets no run to kill
            run.process.killTree();
            run.process.closeOutput(); // no pump reads it
            run.stdinWriter.shutdown();
            place.close();
            throw e;
        }
        return run;
    }

    private void begin(Optional<Duration> timeout, ProcessThreads threads, OutputSink sink) {
        this.threads = threads;
        timeout.ifPresent(t -> timer = threads.timers().schedule(this::expire, t.toMillis(), TimeUnit.MILLISECONDS));
        OutputSink gated = (kind, data) -> {
            if (done.isDone()) {
                // written after the command ended, by something it left running in the background
                log.debug(
                        "{} bytes of {} after pid {} ended were not part of its output",
                        data.length,
                        kind,
                        process.pid());
                return;
            }
            sink.output(kind, data);
        };
        pumps.add(new Pump(process.stdout(), process.pty() ? OutputStreamKind.PTY : OutputStreamKind.STDOUT, gated));
        if (!process.pty()) {
            pumps.add(new Pump(process.stderr(), OutputStreamKind.STDERR, gated));
        }
        process.onExit().whenComplete((status, failure) -> {
            if (failure != null) {
                finish(null, failure);
            } else {
                awaitOutput(status);
            }
        });
    }

    /**
     * Finishes once every pump reached end of file, or once the only thing left is a pump waiting
     * in read for {@link #LINGER} since the exit was seen: a process the command started in the background still
     * holds the pipe, and the command itself is over. The wait counts from the exit, not from the start of the read:
     * a reader blocked since before the exit may hold the command's last output in a buffer it has not been scheduled
     * to return yet on a loaded host. A pump still delivering (a slow client) is waited for.
     */
    private void awaitOutput(ExitStatus status) {
        if (done.isDone()) {
            return;
        }
        long now = System.nanoTime();
        if (exitSeenAt == 0) {
            exitSeenAt = now;
        }
        long lingerFrom = exitSeenAt;
        boolean idle = pumps.stream()
                .allMatch(p -> p.future.isDone()
                        || (p.readingSince != 0 && now - Math.max(p.readingSince, lingerFrom) >= LINGER.toNanos()));
        if (idle) {
            finish(status, null);
            return;
        }
        if (pumpsWatched.compareAndSet(false, true)) {
            // the usual case: a pump has just read the end of its stream (the exit is often seen from inside that
            // read) and is about to finish; the run ends the moment the pumps have, not at the next look
            CompletableFuture.allOf(pumps.stream().map(p -> p.future).toArray(CompletableFuture[]::new))
                    .whenComplete((v, e) -> awaitOutput(status));
        }
        // for a pump left waiting on a pipe that a background process holds open
        threads.timers().schedule(() -> awaitOutput(status), 50, TimeUnit.MILLISECONDS);
    }

    private void finish(ExitStatus status, Throwable failure) {
        ScheduledFuture<?> t = timer;
        if (t != null) {
            t.cancel(false);
        }
        stdinWriter.shutdown();
        // before the run is seen to be done, so that a client starting its next command on the exit finds the place
        // free; later when a pump still waits on a pipe that something the command left behind holds
        List<CompletableFuture<?>> busy = new ArrayList<>();
        pumps.forEach(p -> busy.add(p.future));
        if (busy.stream().allMatch(CompletableFuture::isDone) && pendingStdin.get() == 0) {
            // no bytes left to write: what the stdin thread may still have queued (the close, an empty write) is over
            // at once, and a command started on this exit must not race it for the place
            place.close();
        }
        synchronized (this) {
            busy.add(lastStdinTask);
        }
        CompletableFuture.allOf(busy.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> place.close());
        if (failure != null) {
            done.completeExceptionally(failure);
        } else {
            done.complete(new RunResult(status, timedOut));
        }
    }

    /**
     * Copies one of the process's outputs into the sink, noting when it waits for data. A read is topped up with what
     * the pipe already holds (never waiting for more); a full chunk is handed over in the array it was read into, which
     * is then the sink's (no copy), a partial one is copied out so that small outputs hold no big arrays.
     */
    private final class Pump {
        final CompletableFuture<Void> future;
        volatile long readingSince;

        Pump(InputStream in, OutputStreamKind kind, OutputSink sink) {
            // a terminal's available() is not to be trusted: its output is read as it comes
            boolean topUp = kind != OutputStreamKind.PTY;
            future = CompletableFuture.runAsync(
                    () -> {
                        byte[] buf = new byte[FIRST_READ];
                        long lastHandOff = 0;
                        try (in) {
                            while (true) {
                                readingSince = System.nanoTime();
                                int n = in.read(buf);
                                readingSince = 0;
                                if (n <= 0) {
                                    break;
                                }
                                int read = topUp ? gather(in, buf, n, lastHandOff) : n;
                                boolean eof = read < 0;
                                n = eof ? -read : read;
                                byte[] chunk = buf;
                                if (n == buf.length) {
                                    buf = new byte[CHUNK]; // the sink owns the full one now, and output flows
                                } else {
                                    chunk = Arrays.copyOf(buf, n); // small outputs hold no big arrays
                                    if (n < FIRST_READ && buf.length > FIRST_READ) {
                                        buf = new byte[FIRST_READ]; // output slowed down: wait with a small buffer
                                    }
                                }
                                sink.output(kind, chunk);
                                lastHandOff = System.nanoTime();
                                if (eof) {
                                    break;
                                }
                            }
                        } catch (IOException e) {
                            // a PTY reports EIO once the last writer is gone; that is its end of file
                            log.debug("{} of pid {} ended: {}", kind, process.pid(), e.toString());
                        } finally {
                            readingSince = 0;
                        }
                    },
                    threads.pumps());
        }

        /**
         * Tops a chunk of {@code n} bytes up with what the pipe holds, never waiting for more, except while output comes
         * fast: within {@link #COALESCE} of the last chunk, a partial chunk waits for the pipe to fill as long as the
         * command keeps writing (looked at every {@link #COALESCE_POLL}), so that a command writing in small pieces
         * (8 KiB at a time, say) has its output sent in large messages, each of which costs the transport and the
         * client about as much as a small one. Output that comes now and then, or stops, goes out at once.
         *
         * @return the bytes in the chunk, negated when the end of the output was reached
         */
        private int gather(InputStream in, byte[] buf, int n, long lastHandOff) throws IOException {
            long deadline = lastHandOff + COALESCE.toNanos();
            boolean waited = false;
            while (n < buf.length) {
                int available = in.available();
                if (available > 0) {
                    int more = in.read(buf, n, Math.min(available, buf.length - n));
                    if (more <= 0) {
                        return -n;
                    }
                    n += more;
                    waited = false;
                } else if (waited || lastHandOff == 0 || System.nanoTime() - deadline >= 0) {
                    break; // the command paused (or output comes slowly): send what there is
                } else {
                    LockSupport.parkNanos(COALESCE_POLL.toNanos());
                    waited = true;
                }
            }
            return n;
        }
    }

    private void expire() {
        timedOut = true;
        process.killTree();
    }

    /** The process id inside the sandbox. */
    public long pid() {
        return process.pid();
    }

    /**
     * Queues bytes for the process's stdin and returns at once; they are written in order by a
     * thread of this run, so a process that does not read its input blocks nobody else.
     *
     * @return completes when the bytes have been written (or dropped because stdin is closed)
     */
    public CompletableFuture<Void> writeStdin(byte[] data) {
        pendingStdin.addAndGet(data.length);
        try {
            return stdinTask(() -> {
                try {
                    if (!stdinClosed) {
                        OutputStream stdin = process.stdin();
                        stdin.write(data);
                        stdin.flush();
                    }
                } catch (IOException e) {
                    // the process closed its stdin or exited; its exit event tells the client what happened
                    log.debug("stdin of pid {} closed early: {}", process.pid(), e.toString());
                } finally {
                    pendingStdin.addAndGet(-data.length);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            pendingStdin.addAndGet(-data.length); // the run is over
            return CompletableFuture.completedFuture(null);
        }
    }

    /** Queues a task for the stdin writer, noted as the last, so that the run knows when its thread is free. */
    private synchronized CompletableFuture<Void> stdinTask(Runnable task) {
        CompletableFuture<Void> f = CompletableFuture.runAsync(task, stdinWriter);
        lastStdinTask = f;
        return f;
    }

    /** Bytes queued for stdin and not yet written. */
    public long pendingStdinBytes() {
        return pendingStdin.get();
    }

    /** Writes all of {@code data} to stdin and then closes it, without blocking the caller. */
    public void feedStdin(byte[] data) {
        writeStdin(data);
        closeStdin();
    }

    /** Sends EOF to the process's stdin once what was queued before has been written. */
    public void closeStdin() {
        try {
            stdinTask(() -> {
                if (stdinClosed) {
                    return;
                }
                stdinClosed = true;
                try {
                    process.stdin().close();
                } catch (IOException e) {
                    log.debug("closing stdin of pid {}: {}", process.pid(), e.toString());
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the run is over; its stdin went with it
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
