package ai.chalk.compute.sandbox;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.jspecify.annotations.Nullable;

/**
 * The lines of a command's stdout (or terminal output) as they arrive, cut at {@code \n} across the chunks they come
 * in and decoded as UTF-8; a last line without a newline comes when the events end. Stderr is handed to a sink to
 * keep for a later collect. {@link ExecStream#lines()} reads a sandbox command this way; code built on exec events
 * (the code sandboxes' processes) reads its own events with {@link #StdoutLines(Iterator, Consumer, Consumer)}.
 */
public final class StdoutLines implements Iterator<String> {

    private final Iterator<ExecEvent> events;
    private final Consumer<byte[]> stderr;
    // null: the exit is passed over and the events read on (a timeout's failure follows it)
    private final @Nullable Consumer<ExecEvent> exit;
    private final long limit;
    private final Supplier<? extends RuntimeException> overLimit;
    private final ArrayDeque<String> ready = new ArrayDeque<>();
    private final ByteArrayOutputStream partial = new ByteArrayOutputStream();
    private boolean ended;

    /**
     * The stdout lines of {@code events}, up to and including the {@link ExecEvent.Exited} event, which goes to
     * {@code exit} and ends the lines; stderr chunks go to {@code stderr} as they come.
     *
     * @param events the events, consumed as the lines are
     * @param stderr where the stderr chunks go, to keep for a later collect
     * @param exit where the exit goes, for a later collect
     */
    public StdoutLines(Iterator<ExecEvent> events, Consumer<byte[]> stderr, Consumer<ExecEvent> exit) {
        this(events, stderr, exit, Long.MAX_VALUE, () -> new IllegalStateException("no output limit"));
    }

    /** The lines of a sandbox command: its stderr kept by the call, a line over its output limit stopping it. */
    StdoutLines(Iterator<ExecEvent> events, ExecCall call) {
        this(events, call::keepStderr, null, call.outputLimit(), call::failOverLimit);
    }

    private StdoutLines(
            Iterator<ExecEvent> events,
            Consumer<byte[]> stderr,
            @Nullable Consumer<ExecEvent> exit,
            long limit,
            Supplier<? extends RuntimeException> overLimit) {
        this.events = events;
        this.stderr = stderr;
        this.exit = exit;
        this.limit = limit;
        this.overLimit = overLimit;
    }

    @Override
    public boolean hasNext() {
        while (ready.isEmpty() && !ended) {
            if (!events.hasNext()) {
                ended = true;
                break;
            }
            ExecEvent event = events.next();
            if (event instanceof ExecEvent.Stdout out) {
                split(out.data());
            } else if (event instanceof ExecEvent.PtyOutput out) {
                split(out.data());
            } else if (event instanceof ExecEvent.Stderr err) {
                stderr.accept(err.data());
            } else if (event.isExited() && exit != null) {
                ended = true;
                exit.accept(event);
            }
        }
        if (ended && ready.isEmpty() && partial.size() > 0) {
            ready.add(line(partial.toByteArray(), partial.size()));
            partial.reset();
        }
        return !ready.isEmpty();
    }

    @Override
    public String next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the command's output has been read to the end");
        }
        return ready.poll();
    }

    /**
     * The lines not read yet as a sequential stream.
     *
     * @param onClose what closing the stream does, such as stopping the command
     * @return the lines
     */
    public Stream<String> stream(Runnable onClose) {
        return StreamSupport.stream(
                        Spliterators.spliteratorUnknownSize(this, Spliterator.ORDERED | Spliterator.NONNULL), false)
                .onClose(onClose);
    }

    private void split(byte[] data) {
        int start = 0;
        for (int i = 0; i < data.length; i++) {
            if (data[i] == '\n') {
                partial.write(data, start, i - start);
                ready.add(line(partial.toByteArray(), partial.size()));
                partial.reset();
                start = i + 1;
            }
        }
        partial.write(data, start, data.length - start);
        if (partial.size() > limit) {
            throw overLimit.get(); // one endless line would be held whole
        }
    }

    /** A line without its terminator: {@code \n}, or {@code \r\n} as a terminal writes it. */
    private static String line(byte[] bytes, int length) {
        int n = length > 0 && bytes[length - 1] == '\r' ? length - 1 : length;
        return new String(bytes, 0, n, StandardCharsets.UTF_8);
    }
}
