package ai.chalk.compute.code;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.function.Consumer;

/** One output stream of a snippet: all of it kept, and each complete line handed to a callback as it comes. */
final class OutputLines {

    private final ByteArrayOutputStream all = new ByteArrayOutputStream();
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();
    private final Consumer<OutputMessage> callback;
    private final boolean error;

    OutputLines(Consumer<OutputMessage> callback, boolean error) {
        this.callback = callback;
        this.error = error;
    }

    synchronized void add(byte[] data) {
        all.write(data, 0, data.length);
        for (byte b : data) {
            if (b == '\n') {
                emit();
            } else {
                line.write(b);
            }
        }
    }

    /** Hands on the last line, if it had no line break. */
    synchronized void finish() {
        if (line.size() > 0) {
            emit();
        }
    }

    private void emit() {
        String text = line.toString(StandardCharsets.UTF_8);
        line.reset();
        callback.accept(new OutputMessage(text, Instant.now(), error));
    }

    synchronized String text() {
        return all.toString(StandardCharsets.UTF_8);
    }
}
