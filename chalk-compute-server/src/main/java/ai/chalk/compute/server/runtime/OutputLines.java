package ai.chalk.compute.server.runtime;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * The lines of what a tenant's process writes (a function worker, an entrypoint, a build step), read by the server
 * without holding more than one line's bound: {@code BufferedReader.readLine} keeps a line until its end, and a process
 * that writes without a line break (a {@code print} of a gigabyte, {@code cat /dev/zero}) made the server hold all of
 * it, until its heap ran out. A longer line is cut at the bound (marked {@value #CUT}) and the rest of it dropped.
 */
public final class OutputLines {

    /** The bound the server's readers use: what a function's recent logs keep of a line. */
    public static final int MAX_CHARS = 4096;

    /** Ends a line that was cut at the bound. */
    public static final String CUT = " [line cut]";

    private OutputLines() {}

    /**
     * Reads {@code in} (UTF-8) to its end, giving each line to {@code line} without its line break ({@code \n} or
     * {@code \r\n}), at most {@code maxChars} characters of it.
     */
    public static void forEach(InputStream in, int maxChars, Consumer<String> line) throws IOException {
        try (Reader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 64 << 10)) {
            StringBuilder current = new StringBuilder(Math.min(maxChars, 256));
            boolean skipping = false; // the rest of a line already cut
            char[] buffer = new char[8192];
            for (int n; (n = r.read(buffer)) >= 0; ) {
                for (int i = 0; i < n; i++) {
                    char c = buffer[i];
                    if (c == '\n') {
                        if (!skipping) {
                            line.accept(withoutCarriageReturn(current));
                        }
                        current.setLength(0);
                        skipping = false;
                    } else if (!skipping) {
                        current.append(c);
                        if (current.length() >= maxChars) {
                            line.accept(current + CUT);
                            current.setLength(0);
                            skipping = true;
                        }
                    }
                }
            }
            if (!skipping && current.length() > 0) {
                line.accept(withoutCarriageReturn(current));
            }
        }
    }

    private static String withoutCarriageReturn(StringBuilder line) {
        int end = line.length();
        return end > 0 && line.charAt(end - 1) == '\r' ? line.substring(0, end - 1) : line.toString();
    }
}
