package ai.chalk.compute.sandbox;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.TimeoutException;

/**
 * The lines of a command's stdout (or terminal output) as they arrive, cut at {@code \n} across the chunks they come
 * in; stderr is handed back to the call to keep for a later collect.
 */
final class StdoutLines implements Iterator<String> {

    private final ExecCall call;
    private final ArrayDeque<String> ready = new ArrayDeque<>();
    private final ByteArrayOutputStream partial = new ByteArrayOutputStream();
    private boolean ended;

    StdoutLines(ExecCall call) {
        this.call = call;
    }

    @Override
    public boolean hasNext() {
        while (ready.isEmpty() && !ended) {
            ExecEvent event;
            try {
                event = call.next(-1);
            } catch (TimeoutException e) {
                throw new IllegalStateException("untimed wait timed out", e);
            }
            if (event == null) {
                ended = true;
                if (partial.size() > 0) {
                    ready.add(line(partial.toByteArray(), partial.size()));
                    partial.reset();
                }
            } else if (event instanceof ExecEvent.Stdout out) {
                split(out.data());
            } else if (event instanceof ExecEvent.PtyOutput out) {
                split(out.data());
            } else if (event instanceof ExecEvent.Stderr err) {
                call.keepStderr(err.data());
            }
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
        if (partial.size() > call.outputLimit()) {
            throw call.failOverLimit(); // one endless line would be held whole
        }
    }

    /** A line without its terminator: {@code \n}, or {@code \r\n} as a terminal writes it. */
    private static String line(byte[] bytes, int length) {
        int n = length > 0 && bytes[length - 1] == '\r' ? length - 1 : length;
        return new String(bytes, 0, n, StandardCharsets.UTF_8);
    }
}
