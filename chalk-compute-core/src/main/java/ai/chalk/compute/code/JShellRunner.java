package ai.chalk.compute.code;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.sandbox.Command;
import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecProcess;
import ai.chalk.compute.sandbox.Sandbox;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Java snippets in one JShell state inside the sandbox: our driver ({@code JShellDriver.java}, run by the sandbox's
 * own {@code java} in source-file mode) keeps the state, and this side speaks its line protocol through an
 * {@link ExecProcess}. The driver is the sandbox's code: its lines are bounded, anything else ends it. A snippet that
 * calls {@code System.exit(3)} ends it with exit code 3, and the next snippet starts a fresh state.
 */
final class JShellRunner implements SnippetRunner {

    static final String DRIVER_PATH = "/tmp/ChalkJShellDriver.java";
    static final Duration START_TIMEOUT = Duration.ofSeconds(120);
    static final Duration GRACE = Duration.ofSeconds(3);
    /** The longest line the driver may send: a base64 piece of output, a value or a stack trace. */
    static final int MAX_LINE = 4 << 20;

    private static final String SOURCE = loadSource();
    private static final ScheduledExecutorService TIMERS = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "chalk-jshell-timers");
        t.setDaemon(true);
        return t;
    });

    private final Sandbox sandbox;
    private final Optional<String> workdir;
    private final Object turn = new Object();
    private volatile @Nullable Driver driver;

    JShellRunner(Sandbox sandbox, Optional<String> workdir) {
        this.sandbox = sandbox;
        this.workdir = workdir;
    }

    /** One running driver: its process, and its stdout as lines (an empty Optional once it ended). */
    private static final class Driver {
        final ExecProcess process;
        final BlockingQueue<Optional<String>> lines = new LinkedBlockingQueue<>();
        final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        volatile OptionalInt exitCode = OptionalInt.empty();
        volatile @Nullable String broken;
        volatile boolean killed;
        /** The snippets sent so far: a stop's kill is for its own snippet only. */
        volatile long sent;
        /** Whether the last snippet sent still runs. */
        volatile boolean busy;

        Driver(ExecProcess process) {
            this.process = process;
            Thread reader = new Thread(this::read, "chalk-jshell-reader");
            reader.setDaemon(true);
            reader.start();
        }

        private void read() {
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            try {
                for (ExecEvent event : process.output()) {
                    if (event instanceof ExecEvent.Stdout out) {
                        for (byte b : out.data()) {
                            if (b == '\n') {
                                lines.add(Optional.of(line.toString(StandardCharsets.UTF_8)));
                                line.reset();
                            } else if (line.size() >= MAX_LINE) {
                                broken = "a line longer than " + MAX_LINE + " bytes";
                                process.close();
                                return;
                            } else {
                                line.write(b);
                            }
                        }
                    } else if (event instanceof ExecEvent.Stderr err) {
                        synchronized (stderr) {
                            int room = 8192 - stderr.size();
                            if (room > 0) {
                                stderr.write(err.data(), 0, Math.min(room, err.data().length));
                            }
                        }
                    } else if (event instanceof ExecEvent.Exited exited) {
                        exitCode = exited.exitCode().isPresent()
                                ? exited.exitCode()
                                : OptionalInt.of(128 + exited.signal().orElse(9));
                    }
                }
            } catch (RuntimeException e) {
                broken = broken == null && !killed ? "its output ended: " + e.getMessage() : broken;
            } finally {
                lines.add(Optional.empty());
            }
        }

        void send(String line) {
            process.writeStdin(line + "\n");
        }

        String stderrText() {
            synchronized (stderr) {
                return stderr.toString(StandardCharsets.UTF_8).strip();
            }
        }
    }

    @Override
    public ExecutionResult run(String code, RunOptions options, Optional<Duration> defaultTimeout) {
        synchronized (turn) {
            Driver d = driver;
            if (d == null) {
                try {
                    d = start();
                } catch (RuntimeException e) {
                    return ExecutionResult.failed(
                            "", "", List.of(), "JShell could not start in the sandbox: " + e.getMessage());
                }
                driver = d;
            }
            return runOn(d, code, options, options.timeoutOption().or(() -> defaultTimeout));
        }
    }

    private Driver start() {
        sandbox.files().writeText(DRIVER_PATH, SOURCE);
        Command command = Command.of("java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", DRIVER_PATH);
        if (workdir.isPresent()) {
            command = command.workdir(workdir.get());
        }
        Driver d;
        try {
            d = new Driver(sandbox.execStart(command));
        } catch (ChalkComputeException e) {
            throw new IllegalStateException(
                    e.getMessage() + " (the language JAVA needs java, a JDK, on the PATH of the sandbox's image)", e);
        }
        try {
            Optional<String> first = d.lines.poll(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            if (first == null || first.isEmpty() || !first.get().startsWith("READY ")) {
                d.process.close();
                throw new IllegalStateException(
                        "the driver did not start" + (d.stderrText().isEmpty() ? "" : ": " + d.stderrText()));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            d.process.close();
            throw new IllegalStateException("interrupted while JShell started");
        }
        return d;
    }

    private ExecutionResult runOn(Driver d, String code, RunOptions options, Optional<Duration> timeout) {
        OutputLines stdout = new OutputLines(options.stdoutCallback(), false);
        OutputLines stderr = new OutputLines(options.stderrCallback(), true);
        List<Result> results = new ArrayList<>();
        CodeError error = null;
        String status = null;
        boolean[] timedOut = {false};
        ScheduledFuture<?> timer = timeout.map(t -> TIMERS.schedule(
                        () -> {
                            timedOut[0] = true;
                            stop(d);
                        },
                        t.toMillis(),
                        TimeUnit.MILLISECONDS))
                .orElse(null);
        d.sent++;
        d.busy = true;
        try {
            d.send("RUN " + encode(code));
            while (status == null) {
                Optional<String> line = d.lines.take();
                if (line.isEmpty()) {
                    break;
                }
                String[] parts = line.get().split(" ", -1);
                switch (parts[0]) {
                    case "OUT" -> stdout.add(decode(parts, 1).getBytes(StandardCharsets.UTF_8));
                    case "ERR" -> stderr.add(decode(parts, 1).getBytes(StandardCharsets.UTF_8));
                    case "VAL" ->
                        results.add(new Result(
                                Map.of("text/plain", decode(parts, 1).getBytes(StandardCharsets.UTF_8)), true));
                    case "EXC" -> error = new CodeError(decode(parts, 1), decode(parts, 2), decode(parts, 3));
                    case "DONE" -> status = decode(parts, 1);
                    default -> throw new IllegalArgumentException("unknown message");
                }
            }
        } catch (IllegalArgumentException e) {
            d.broken = "a line that is not the protocol";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stop(d);
        } finally {
            d.busy = false;
            if (timer != null) {
                timer.cancel(false);
            }
        }
        stdout.finish();
        stderr.finish();
        if (status != null && d.broken == null) {
            if (status.equals("interrupted") && timedOut[0]) {
                return new ExecutionResult(
                        stdout.text(),
                        stderr.text(),
                        results,
                        Optional.empty(),
                        false,
                        Optional.of("timed out after " + timeout.orElseThrow().toSeconds()
                                + "s: the snippet was stopped; the JShell state is kept"),
                        OptionalInt.empty(),
                        List.of());
            }
            return new ExecutionResult(
                    stdout.text(),
                    stderr.text(),
                    results,
                    Optional.ofNullable(error),
                    true,
                    Optional.empty(),
                    OptionalInt.empty(),
                    List.of());
        }
        // the driver ended: System.exit, a crash, a kill after a stop, or output that broke the protocol
        driver = null;
        d.process.close();
        String fresh = "; the next snippet starts a fresh JShell state";
        if (d.broken != null) {
            return ExecutionResult.failed(
                    stdout.text(),
                    stderr.text(),
                    results,
                    "the JShell driver's output broke the protocol (" + d.broken + ")" + fresh);
        }
        if (d.killed) {
            return ExecutionResult.failed(
                    stdout.text(),
                    stderr.text(),
                    results,
                    (timedOut[0] ? "timed out" : "interrupted") + ", and the snippet did not stop within "
                            + GRACE.toSeconds() + "s: JShell was killed and its state is lost" + fresh);
        }
        return new ExecutionResult(
                stdout.text(),
                stderr.text(),
                results,
                Optional.empty(),
                true,
                Optional.empty(),
                OptionalInt.of(d.exitCode.orElse(1)),
                List.of());
    }

    /**
     * Stops the snippet running now; if it has not stopped {@link #GRACE} later, the driver is killed (its state with
     * it). A snippet that stopped leaves the driver alone: the kill is for that snippet, not for the ones after it.
     */
    private void stop(Driver d) {
        long snippet = d.sent;
        try {
            d.send("STOP");
        } catch (RuntimeException e) {
            // it ended already
        }
        TIMERS.schedule(
                () -> {
                    if (driver == d && d.busy && d.sent == snippet && d.process.isAlive()) {
                        d.killed = true;
                        d.process.close();
                    }
                },
                GRACE.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    @Override
    public void interrupt() {
        Driver d = driver;
        if (d != null) {
            stop(d);
        }
    }

    @Override
    public void close() {
        Driver d = driver;
        driver = null;
        if (d != null) {
            d.process.close();
        }
    }

    private static String encode(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    private static String decode(String[] parts, int index) {
        if (index >= parts.length) {
            throw new IllegalArgumentException("missing field");
        }
        return new String(Base64.getDecoder().decode(parts[index]), StandardCharsets.UTF_8);
    }

    private static String loadSource() {
        try (InputStream in = JShellRunner.class.getResourceAsStream("JShellDriver.java")) {
            if (in == null) {
                throw new IllegalStateException("JShellDriver.java is missing from the SDK's jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
