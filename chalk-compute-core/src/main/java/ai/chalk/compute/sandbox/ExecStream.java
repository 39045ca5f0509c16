package ai.chalk.compute.sandbox;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * The events of a running command, delivered as they happen: iterate over it, or use
 * {@link #stream()}, or read its stdout line by line with {@link #lines()}.
 *
 * <pre>{@code
 * try (ExecStream events = sandbox.execStream(Command.of("npm", "run", "build").workdir("/app"))) {
 *     for (ExecEvent event : events) {
 *         if (event.stdoutText() != null) System.out.print(event.stdoutText());
 *         if (event.stderrText() != null) System.err.print(event.stderrText());
 *     }
 * }
 * }</pre>
 *
 * <p>Events are pulled from the server as you consume them, so only a few are held in memory at
 * a time however much the command prints; if you stop reading, the server stops reading the
 * command's output and the command blocks when its pipe fills, without affecting other commands.
 *
 * <p>Events can be consumed once, by one reader. {@link #close()} stops the command if it is
 * still running and ends the iteration; always close a stream you do not read to the end.
 * A failure reported by the server is thrown from the iterator as a
 * {@link ai.chalk.compute.error.ChalkComputeException}; when the command's
 * {@linkplain Command#timeout(java.time.Duration) timeout} kills it, the {@link ExecEvent.Exited}
 * event (signal 9) is followed by an {@link ExecTimeoutException}.
 */
public final class ExecStream implements ExecEvents {

    private final ExecCall call;

    ExecStream(ExecCall call) {
        this.call = call;
    }

    /**
     * An iterator over the events not consumed yet. {@code hasNext()} waits for the next event;
     * the last event is {@link ExecEvent.Exited}.
     */
    @Override
    public Iterator<ExecEvent> iterator() {
        return new Iterator<>() {
            private ExecEvent next;
            private boolean done;

            @Override
            public boolean hasNext() {
                if (next == null && !done) {
                    try {
                        next = call.next(-1);
                    } catch (TimeoutException e) {
                        throw new IllegalStateException("untimed wait timed out", e);
                    }
                    done = next == null;
                }
                return next != null;
            }

            @Override
            public ExecEvent next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("the command's events have all been consumed");
                }
                ExecEvent event = next;
                next = null;
                return event;
            }
        };
    }

    /**
     * The lines the command writes to stdout, each as soon as it is complete, decoded as UTF-8 and without its
     * {@code \n} (or the {@code \r\n} of a terminal); a last line without a newline comes when the command ends.
     * Like the events, lines are pulled from the server as you consume them, so output of any size can be read this
     * way; closing the returned stream closes this object.
     *
     * <pre>{@code
     * try (ExecStream build = sandbox.execStream(Command.of("make", "all"));
     *         Stream<String> lines = build.lines()) {
     *     lines.filter(line -> line.contains("warning")).forEach(System.out::println);
     *     ExecResult end = build.collect(); // how it ended, and its stderr
     * }
     * }</pre>
     *
     * <p>Stderr is not part of the lines: it is kept, up to the command's {@linkplain Command#outputLimit(long)
     * output limit}, for {@link #collect()}, which after the last line gives how the command ended. A single line
     * longer than the limit stops the command with an {@link ExecOutputLimitException}. Lines, events and
     * {@code collect()} share one sequence: what one of them consumed, the others do not see.
     *
     * @return the stdout lines not consumed yet, as a sequential stream
     */
    public Stream<String> lines() {
        return new StdoutLines(iterator(), call).stream(this::close);
    }

    /**
     * Waits for the command to exit and collects the output not consumed yet, in memory: at most the command's
     * {@linkplain Command#outputLimit(long) output limit} (32 MiB unless set).
     *
     * @return the output not consumed through the iterator, and how the command ended
     * @throws ExecTimeoutException     when the command's timeout killed it
     * @throws ExecOutputLimitException when the output went over the limit (the command is killed)
     */
    public ExecResult collect() {
        return call.collect(-1).orElseThrow();
    }

    /**
     * Stops the command if it is still running (the server kills it and everything it started)
     * and ends the iteration. Does nothing once the command has exited.
     */
    @Override
    public void close() {
        call.close();
    }
}
