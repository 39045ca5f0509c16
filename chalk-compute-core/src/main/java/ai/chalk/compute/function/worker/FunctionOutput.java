package ai.chalk.compute.function.worker;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * Says which function wrote what: in a worker, a line written to {@code System.out} or {@code System.err} (by
 * {@code println} or by a logging framework's console appender) on the thread running a call is prefixed with
 * {@code [chalk-function NAME] }, so the server can tell the function's output from the rest of the replica's
 * (docs/functions-protocol.md section 3). Lines written outside calls go out as they are. Only the worker's
 * {@code main} installs it; a worker embedded in another JVM leaves that JVM's streams alone.
 */
final class FunctionOutput {

    /** The start of a line's tag; the function's name and {@code "] "} follow. */
    static final String TAG_PREFIX = "[chalk-function ";

    /** A line longer than this is written in parts, each tagged. */
    private static final int MAX_BUFFERED = 8192;

    private static final ThreadLocal<String> CURRENT = new ThreadLocal<>();
    private static volatile Tagger[] installed = new Tagger[0];

    private FunctionOutput() {}

    /** Replaces {@code System.out} and {@code System.err} with streams that tag the lines calls write. */
    static synchronized void install() {
        Charset charset = Charset.defaultCharset();
        Tagger out = new Tagger(System.out);
        Tagger err = new Tagger(System.err);
        System.setOut(new PrintStream(out, true, charset));
        System.setErr(new PrintStream(err, true, charset));
        installed = new Tagger[] {out, err};
    }

    /**
     * Runs a call of a function on this thread, its output tagged with the function's name.
     *
     * @param function the function's name
     * @param call     the call
     * @return what the call returned
     */
    static <T> T during(String function, Supplier<T> call) {
        String previous = CURRENT.get();
        CURRENT.set(function);
        try {
            return call.get();
        } finally {
            for (Tagger tagger : installed) {
                tagger.endLine(); // a last line without its end of line is still the function's
            }
            if (previous == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(previous);
            }
        }
    }

    /** Buffers a call's output per thread until the end of a line, then writes the line, tagged, at once. */
    private static final class Tagger extends OutputStream {

        private final OutputStream out;
        private final ThreadLocal<ByteArrayOutputStream> partial = ThreadLocal.withInitial(ByteArrayOutputStream::new);

        Tagger(OutputStream out) {
            this.out = out;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws IOException {
            String function = CURRENT.get();
            if (function == null) {
                out.write(bytes, offset, length);
                return;
            }
            ByteArrayOutputStream line = partial.get();
            for (int i = offset; i < offset + length; i++) {
                line.write(bytes[i]);
                if (bytes[i] == '\n' || line.size() >= MAX_BUFFERED) {
                    emit(function, line);
                }
            }
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        void endLine() {
            String function = CURRENT.get();
            ByteArrayOutputStream line = partial.get();
            if (function != null && line.size() > 0) {
                try {
                    emit(function, line);
                    out.flush();
                } catch (IOException e) {
                    line.reset(); // the stream is gone: nothing to write to
                }
            }
        }

        private void emit(String function, ByteArrayOutputStream line) throws IOException {
            byte[] tag = (TAG_PREFIX + function + "] ").getBytes(StandardCharsets.UTF_8);
            synchronized (out) {
                out.write(tag);
                line.writeTo(out);
                byte[] written = line.toByteArray();
                if (written.length == 0 || written[written.length - 1] != '\n') {
                    out.write('\n');
                }
            }
            line.reset();
        }
    }
}
