package ai.chalk.compute.sandbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A command running in a sandbox that you interact with while it runs: write to its stdin, send
 * it signals, resize its terminal, read its output as it comes, and wait for it to exit.
 *
 * <pre>{@code
 * try (ExecProcess bash = sandbox.execStart("bash")) {
 *     bash.writeStdin("echo hello\n");
 *     bash.writeStdin("exit\n");
 *     bash.closeStdin();
 *     ExecResult result = bash.waitFor();
 * }
 * }</pre>
 *
 * <p>Output is pulled from the server as you consume it (through {@link #output()} or
 * {@link #waitFor()}); until then the command blocks once its pipes fill, exactly like a local
 * process whose output is not read. Writing a lot to stdin of a command whose output you do not
 * read can therefore block both sides, as with {@link java.lang.Process}.
 *
 * <p>{@link #close()} kills the command if it is still running.
 */
public final class ExecProcess implements AutoCloseable, ai.chalk.compute.sandbox.spi.RunningCommand {

    private final ExecCall call;
    private final ExecStream output;

    ExecProcess(ExecCall call) {
        this.call = call;
        this.output = new ExecStream(call);
    }

    /**
     * The process id inside the sandbox, waiting for the process to start if needed.
     *
     * @throws ai.chalk.compute.error.ChalkComputeException when the command could not be started
     */
    public long pid() {
        return call.pid();
    }

    /**
     * Writes bytes to the process's standard input. Blocks while the connection cannot take more
     * data, so large inputs are not buffered in memory.
     *
     * @param data the bytes to write
     * @throws IllegalStateException when stdin has been closed or the process has ended
     */
    public void writeStdin(byte[] data) {
        call.writeStdin(Objects.requireNonNull(data, "data"));
    }

    /**
     * Writes text, encoded as UTF-8, to the process's standard input.
     *
     * @param text the text to write
     * @throws IllegalStateException when stdin has been closed or the process has ended
     */
    public void writeStdin(String text) {
        writeStdin(Objects.requireNonNull(text, "text").getBytes(StandardCharsets.UTF_8));
    }

    /** Closes the process's standard input: it reads end-of-file. Does nothing if already closed. */
    public void closeStdin() {
        call.closeStdin();
    }

    /**
     * Sends a signal to the process. Does nothing once the process has exited.
     *
     * @param signal the signal's Linux number, for example 15 for SIGTERM
     */
    public void sendSignal(int signal) {
        if (signal < 1 || signal > 64) {
            throw new IllegalArgumentException("not a signal number: " + signal);
        }
        call.signal(signal);
    }

    /**
     * Sends a signal to the process. Does nothing once the process has exited.
     *
     * @param signal the signal
     */
    public void sendSignal(Signal signal) {
        sendSignal(signal.number());
    }

    /**
     * Changes the size of the process's terminal; only meaningful for commands started with
     * {@link Command#pty(int, int)}.
     *
     * @param cols width in characters
     * @param rows height in lines
     */
    public void resize(int cols, int rows) {
        if (cols < 1 || rows < 1) {
            throw new IllegalArgumentException("terminal size must be at least 1x1, got " + cols + "x" + rows);
        }
        call.resize(cols, rows);
    }

    /** Whether the process may still be running: it has not been reported as exited nor closed. */
    public boolean isAlive() {
        return call.isAlive();
    }

    /**
     * The process's events not consumed yet, as they happen. There is one sequence of events per
     * process: what you read here is not part of {@link #waitFor()}'s result. Closing the
     * returned stream closes this process.
     */
    public ExecStream output() {
        return output;
    }

    /**
     * Waits for the process to exit, collecting its output in memory: at most the command's
     * {@linkplain Command#outputLimit(long) output limit} (32 MiB unless set); read {@link #output()} as it comes for
     * more.
     *
     * @return the output not consumed through {@link #output()}, and how the process ended
     * @throws ExecTimeoutException when the command's timeout killed it
     * @throws ExecOutputLimitException when the output went over the limit (the process is killed)
     * @throws ai.chalk.compute.error.ChalkComputeException when the server reported an error, or
     *         (status {@code CANCELLED}) when this process was closed before it exited
     */
    public ExecResult waitFor() {
        return call.collect(-1).orElseThrow();
    }

    /**
     * Waits at most the given time for the process to exit. The output read while waiting is
     * kept, so calling again continues where this call stopped.
     *
     * @param timeout how long to wait
     * @return the result, or empty when the process is still running
     * @throws ExecOutputLimitException when the output went over the command's output limit, as for
     *         {@link #waitFor()}
     */
    public Optional<ExecResult> waitFor(Duration timeout) {
        long nanos;
        try {
            nanos = Math.max(0, timeout.toNanos());
        } catch (ArithmeticException e) {
            nanos = Long.MAX_VALUE / 2;
        }
        return call.collect(nanos);
    }

    /** Kills the process if it is still running and ends its output. Does nothing once it has exited. */
    @Override
    public void close() {
        call.close();
    }
}
