package ai.chalk.compute.server.runtime;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * The lines of what a tenant's process writes (a function worker, an entrypoint, a build step), split by the server
 * without holding more than one line's bound: {@code BufferedReader.readLine} keeps a line until its end, and a process
 * that writes without a line break (a {@code print} of a gigabyte, {@code cat /dev/zero}) made the server hold all of
 * it, until its heap ran out. A longer line is cut at the bound (marked {@value #CUT}) and the rest of it dropped. Lines
 * end at {@code \n}, {@code \r\n} or a lone {@code \r} (as {@code readLine} has it: a progress bar redrawn in place is a
 * line per redraw). Feed it text with {@link #accept}, then {@link #finish}; one instance per stream, not thread-safe.
 */
public final class OutputLines {

    /** The bound the server's readers use: what a function's recent logs keep of a line. */
    public static final int MAX_CHARS = 4096;

    /** Ends a line that was cut at the bound. */
    public static final String CUT = " [line cut]";

    private final int maxChars;
    private final Consumer<String> line;
    private final StringBuilder current;
    private boolean skipping; // the rest of a line already cut
    private boolean afterCarriageReturn; // a \n right after it ends no second line

    /** Splits into lines of at most {@code maxChars} characters, given to {@code line} without their line break. */
    public OutputLines(int maxChars, Consumer<String> line) {
        this.maxChars = maxChars;
        this.line = line;
        this.current = new StringBuilder(Math.min(maxChars, 256));
    }

    /**
     * Reads {@code in} (UTF-8) to its end, giving each line to {@code line} without its line break, at most
     * {@code maxChars} characters of it.
     */
    public static void forEach(InputStream in, int maxChars, Consumer<String> line) throws IOException {
        OutputLines lines = new OutputLines(maxChars, line);
        try (Reader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 64 << 10)) {
            char[] buffer = new char[8192];
            for (int n; (n = r.read(buffer)) >= 0; ) {
                lines.accept(buffer, 0, n);
            }
        }
        lines.finish();
    }

    /** Splits more of the stream's text. */
    public void accept(CharSequence text) {
        for (int i = 0; i < text.length(); i++) {
            accept(text.charAt(i));
        }
    }

    /** Splits more of the stream's text, {@code length} characters of {@code chars} from {@code offset}. */
    public void accept(char[] chars, int offset, int length) {
        for (int i = offset; i < offset + length; i++) {
            accept(chars[i]);
        }
    }

    private void accept(char c) {
        boolean afterReturn = afterCarriageReturn;
        afterCarriageReturn = c == '\r';
        if (c == '\n' || c == '\r') {
            if (!(c == '\n' && afterReturn)) {
                end();
            }
            return;
        }
        if (skipping) {
            return;
        }
        if (current.length() >= maxChars) {
            // never half a character: a high surrogate at the bound goes with the rest
            if (Character.isHighSurrogate(current.charAt(current.length() - 1))) {
                current.setLength(current.length() - 1);
            }
            line.accept(current + CUT);
            current.setLength(0);
            skipping = true;
            return;
        }
        current.append(c);
    }

    private void end() {
        if (!skipping) {
            line.accept(current.toString());
        }
        current.setLength(0);
        skipping = false;
    }

    /** Gives the last line, when the stream ended without a line break after it. */
    public void finish() {
        if (!skipping && current.length() > 0) {
            line.accept(current.toString());
        }
        current.setLength(0);
        skipping = false;
    }
}
