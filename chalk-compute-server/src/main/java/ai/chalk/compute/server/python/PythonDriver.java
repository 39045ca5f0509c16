package ai.chalk.compute.server.python;

import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.runtime.ExitStatus;
import ai.chalk.compute.server.runtime.ProcessSpec;
import ai.chalk.compute.server.runtime.ProcessStartException;
import ai.chalk.compute.server.runtime.RuntimeProcess;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * One running driver: {@code python3 -u -c <driver.py>} started through the sandbox's exec path, commanded on its
 * stdin and read through {@link DriverFrames} on its stdout. What it writes to its own stderr before it takes fd 2
 * over (a missing module, a broken interpreter) is kept, at most {@link #STDERR_KEPT} bytes, to explain a failed
 * start.
 */
final class PythonDriver {

    static final int STDERR_KEPT = 8 * 1024;
    static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    static final String SOURCE = loadSource();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final RuntimeProcess process;
    private final DriverFrames frames;
    private final String python;

    private PythonDriver(RuntimeProcess process, DriverFrames frames, String python) {
        this.process = process;
        this.frames = frames;
        this.python = python;
    }

    /**
     * Starts a driver in {@code sandbox} and waits until it says it is ready.
     *
     * @throws DriverStartException with a message for the user when there is no python3 or it cannot run the driver
     */
    static PythonDriver start(RuntimeSandbox sandbox, ExecutorService threads, EnvironmentBytes.Account artifactBudget)
            throws DriverStartException {
        RuntimeProcess process;
        try {
            process = sandbox.exec(new ProcessSpec(
                    "python3", List.of("-u", "-c", SOURCE), Optional.empty(), Map.of(), Optional.empty()));
        } catch (ProcessStartException e) {
            throw new DriverStartException("this sandbox cannot run Python: " + e.getMessage()
                    + " (ExecutePython needs python3 on the PATH of the sandbox's image)");
        }
        ByteArrayOutputStream kept = new ByteArrayOutputStream();
        threads.execute(() -> keepStart(process.stderr(), kept));
        DriverFrames frames = new DriverFrames(new BufferedInputStream(process.stdout(), 64 * 1024), artifactBudget);
        var ready = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return frames.next(0);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                },
                threads);
        try {
            DriverEvent first = ready.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            if (first instanceof DriverEvent.Ready r) {
                return new PythonDriver(process, frames, r.python());
            }
            process.killTree();
            String error = startError(process, kept);
            process.closeOutput();
            throw new DriverStartException("python3 in this sandbox did not start the driver"
                    + (first == null ? "" : ": it wrote " + first.getClass().getSimpleName() + " first")
                    + error);
        } catch (TimeoutException e) {
            process.killTree();
            process.closeOutput();
            throw new DriverStartException(
                    "python3 in this sandbox did not start within " + START_TIMEOUT.toSeconds() + "s");
        } catch (java.util.concurrent.ExecutionException e) {
            process.killTree();
            String error = startError(process, kept);
            process.closeOutput();
            throw new DriverStartException("python3 in this sandbox could not run the driver ("
                    + e.getCause().getMessage() + ")" + error);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.killTree();
            process.closeOutput();
            throw new DriverStartException("interrupted while python3 started");
        }
    }

    private static String startError(RuntimeProcess process, ByteArrayOutputStream kept) {
        try {
            ExitStatus status = process.onExit().get(2, TimeUnit.SECONDS);
            String text;
            synchronized (kept) {
                text = kept.toString(StandardCharsets.UTF_8).strip();
            }
            return "; it exited with " + status + (text.isEmpty() ? "" : ": " + text);
        } catch (Exception e) {
            return "";
        }
    }

    /** Keeps the first {@link #STDERR_KEPT} bytes of the driver's own stderr and reads past the rest. */
    private static void keepStart(InputStream in, ByteArrayOutputStream kept) {
        byte[] buffer = new byte[4096];
        try (in) {
            int n;
            while ((n = in.read(buffer)) > 0) {
                synchronized (kept) {
                    int room = STDERR_KEPT - kept.size();
                    if (room > 0) {
                        kept.write(buffer, 0, Math.min(room, n));
                    }
                }
            }
        } catch (IOException e) {
            // the driver ended; what was kept is enough
        }
    }

    /** The interpreter's version, as the driver said. */
    String python() {
        return python;
    }

    /** Sends one command (a JSON object) to the driver. */
    void send(Map<String, Object> command) throws IOException {
        byte[] body = JSON.writeValueAsBytes(command);
        OutputStream stdin = process.stdin();
        synchronized (this) {
            stdin.write(ByteBuffer.allocate(4).putInt(body.length).array());
            stdin.write(body);
            stdin.flush();
        }
    }

    /** The next event, or null once the driver's output has ended. */
    @Nullable
    DriverEvent next(long artifactLimit) throws IOException {
        return frames.next(artifactLimit);
    }

    /** SIGINT to the interpreter: a KeyboardInterrupt in the running snippet. */
    void interrupt() {
        process.signal(2);
    }

    /** Kills the interpreter and everything it started. */
    void kill() {
        process.killTree();
    }

    /** Completes when the interpreter has ended. */
    java.util.concurrent.CompletableFuture<ExitStatus> onExit() {
        return process.onExit();
    }

    /** The interpreter has ended, or been killed: what it wrote and was not read goes, with its pipe. */
    void release() {
        process.closeOutput();
    }

    /** How the interpreter ended, waiting at most {@code wait}; empty while it still runs. */
    Optional<ExitStatus> exit(Duration wait) {
        try {
            return Optional.of(process.onExit().get(wait.toMillis(), TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        } catch (java.util.concurrent.ExecutionException e) {
            return Optional.empty();
        }
    }

    private static String loadSource() {
        try (InputStream in = PythonDriver.class.getResourceAsStream("driver.py")) {
            if (in == null) {
                throw new IllegalStateException("driver.py is missing from the server's jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
