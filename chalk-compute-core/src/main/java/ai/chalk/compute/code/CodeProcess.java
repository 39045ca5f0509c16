package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.ExecEvent;
import ai.chalk.compute.sandbox.ExecEvents;
import ai.chalk.compute.sandbox.ExecResult;
import ai.chalk.compute.sandbox.StdoutLines;
import java.io.ByteArrayOutputStream;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.stream.Stream;

/**
 * A program started by {@link CodeCommands#exec(String, String...)}, as code_sandboxes' streaming {@code exec}: its
 * events ({@link ExecEvent.Stdout}, {@link ExecEvent.Stderr}, then {@link ExecEvent.Exited}) as they happen, the same
 * on every variant.
 *
 * <pre>{@code
 * try (CodeProcess process = sandbox.commands().exec("python3", "-c", "print('hello')")) {
 *     process.lines().forEach(System.out::println);   // stdout, line by line as it comes
 *     ExecResult end = process.collect();            // how it ended, and its stderr
 * }
 * }</pre>
 *
 * <p>Events are consumed once, by one reader; lines, events and {@link #collect()} share one sequence. Only a few
 * events are held at a time: a program whose output is not read blocks when its pipe fills. {@link #close()} stops
 * the program if it still runs.
 */
public final class CodeProcess implements ExecEvents {

    /** How many output chunks wait for a reader before the program is made to wait. */
    static final int QUEUE = 64;

    private final Iterator<ExecEvent> events;
    private final Runnable stop;
    private final ByteArrayOutputStream keptStderr = new ByteArrayOutputStream();
    private ExecEvent pendingExit; // the exit lines() took off the events, for collect()

    CodeProcess(Iterator<ExecEvent> events, Runnable stop) {
        this.events = events;
        this.stop = stop;
    }

    /** A process whose events a producer puts on {@link Feed}; {@code stop} ends the program. */
    static Feed feed(Runnable stop) {
        return new Feed(stop);
    }

    /** The producing side of a process: output chunks in order, then exactly one {@link #exited}. */
    static final class Feed {
        private final BlockingQueue<ExecEvent> queue = new LinkedBlockingQueue<>(QUEUE);
        private final CodeProcess process;
        private volatile boolean closed;

        private Feed(Runnable stopProgram) {
            // once closed nobody reads: the producers must not wait for room
            Runnable stop = () -> {
                closed = true;
                stopProgram.run();
                queue.clear();
            };
            this.process = new CodeProcess(
                    new Iterator<>() {
                        private ExecEvent next;
                        private boolean done;

                        @Override
                        public boolean hasNext() {
                            if (next == null && !done) {
                                try {
                                    next = queue.take();
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                    throw new IllegalStateException("interrupted while waiting for the program", e);
                                }
                            }
                            return next != null;
                        }

                        @Override
                        public ExecEvent next() {
                            if (!hasNext()) {
                                throw new NoSuchElementException("the program's events have all been consumed");
                            }
                            ExecEvent e = next;
                            next = null;
                            done = e.isExited();
                            return e;
                        }
                    },
                    stop);
        }

        CodeProcess process() {
            return process;
        }

        /** Hands on a chunk, waiting while the reader is behind. */
        void stdout(byte[] data, int length) {
            put(new ExecEvent.Stdout(java.util.Arrays.copyOf(data, length)));
        }

        void stderr(byte[] data, int length) {
            put(new ExecEvent.Stderr(java.util.Arrays.copyOf(data, length)));
        }

        void exited(OptionalInt code, OptionalInt signal) {
            put(new ExecEvent.Exited(code, signal));
        }

        private void put(ExecEvent event) {
            try {
                while (!closed && !queue.offer(event, 100, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                    // the reader is behind: the program waits with it
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The events not consumed yet; {@code hasNext()} waits for the next one, and the last is the exit. */
    @Override
    public Iterator<ExecEvent> iterator() {
        return events;
    }

    /**
     * The lines the program writes to stdout, each as soon as it is complete, decoded as UTF-8 without the line
     * break; a last line without one comes when the program ends. Stderr is kept for {@link #collect()}.
     */
    public Stream<String> lines() {
        return new StdoutLines(events, keptStderr::writeBytes, exit -> pendingExit = exit).stream(this::close);
    }

    /** Waits for the program to end and gives the output not consumed yet and how it ended. */
    public ExecResult collect() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        err.writeBytes(keptStderr.toByteArray());
        keptStderr.reset();
        ExecEvent exit = pendingExit;
        while (exit == null && events.hasNext()) {
            ExecEvent event = events.next();
            if (event instanceof ExecEvent.Stdout o) {
                out.writeBytes(o.data());
            } else if (event instanceof ExecEvent.PtyOutput o) {
                out.writeBytes(o.data());
            } else if (event instanceof ExecEvent.Stderr e) {
                err.writeBytes(e.data());
            } else if (event.isExited()) {
                exit = event;
            }
        }
        if (exit == null) {
            throw new IllegalStateException("the program's exit was consumed already");
        }
        return new ExecResult(
                out.toByteArray(),
                err.toByteArray(),
                exit.exitCode()
                        .orElse(exit.signal().isPresent() ? 128 + exit.signal().getAsInt() : -1),
                exit.signal());
    }

    /** Stops the program if it still runs and ends the events. */
    @Override
    public void close() {
        stop.run();
    }
}
