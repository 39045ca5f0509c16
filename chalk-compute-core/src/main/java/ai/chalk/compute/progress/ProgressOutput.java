package ai.chalk.compute.progress;

import java.io.PrintStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One stream that progress groups and failure reports write to, and which group wrote last, so that
 * a group whose lines follow something else repeats its heading. Everything writing to stderr shares one instance.
 */
final class ProgressOutput {

    private static final ProgressOutput STDERR = new ProgressOutput(() -> System.err, stderrCharset());

    /** Held while a group decides what to print and prints it. */
    final ReentrantLock lock = new ReentrantLock();

    private final Supplier<PrintStream> target;
    private final Charset charset; // the stream's charset when known, else null
    private ProgressGroup last; // guarded by lock; null when nothing, another writer or a closed group wrote last

    private ProgressOutput(Supplier<PrintStream> target, Charset charset) {
        this.target = target;
        this.charset = charset;
    }

    /**
     * The process's stderr, looked up at each write so that {@code System.setErr} is honoured. When
     * its charset cannot encode a line (an ASCII locale, the JDK 17 default in many containers), the
     * line is written in UTF-8, as the Python SDK does, rather than with {@code ?} for each mark.
     */
    static ProgressOutput stderr() {
        return STDERR;
    }

    /** Another stream; text is printed with the stream's own charset. */
    static ProgressOutput to(PrintStream stream) {
        return to(stream, null);
    }

    /** Another stream whose charset is known, {@code null} if not. */
    static ProgressOutput to(PrintStream stream, Charset charset) {
        Objects.requireNonNull(stream, "stream");
        return new ProgressOutput(() -> stream, charset);
    }

    /**
     * Writes one of the group's lines in a single call, preceded by the group's heading when the
     * previous line on this output was not the group's. The caller holds {@link #lock}.
     */
    void write(ProgressGroup group, String line, boolean closes, boolean color) {
        String chunk = last == group ? line : group.headingLine(color) + line;
        last = closes ? null : group;
        print(chunk);
    }

    /** Writes text that belongs to no group, in a single call; the next group line repeats its heading. */
    void writeOther(String text) {
        lock.lock();
        try {
            last = null;
            print(text);
        } finally {
            lock.unlock();
        }
    }

    private void print(String chunk) {
        PrintStream out = target.get();
        if (out == null) {
            return;
        }
        if (charset == null || charset.newEncoder().canEncode(chunk)) {
            out.print(chunk);
        } else {
            byte[] utf8 = chunk.getBytes(StandardCharsets.UTF_8);
            out.write(utf8, 0, utf8.length);
        }
        out.flush();
    }

    /** The charset the JVM gave {@code System.err}: {@code stderr.encoding} from JDK 19, else the default charset. */
    private static Charset stderrCharset() {
        String name = System.getProperty("stderr.encoding", System.getProperty("sun.stderr.encoding"));
        try {
            return name == null ? Charset.defaultCharset() : Charset.forName(name);
        } catch (IllegalArgumentException e) {
            return Charset.defaultCharset();
        }
    }
}
