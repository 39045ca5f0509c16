package ai.chalk.compute.error;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Numbered source lines under the frames of a remote traceback, as the SDK shows them, where the source is available
 * to the caller: the failing line marked with {@code >}, two lines either side.
 * <pre>
 *     at com.acme.Pricing.price(Pricing.java:42)
 *           40 |     public double price(String sku, int quantity) {
 *           41 |         Double unit = PRICES.get(sku);
 *        &gt;  42 |         if (unit == null) throw new IllegalArgumentException("no price for " + sku);
 *           43 |         return unit * quantity;
 *           44 |     }
 * </pre>
 * Sources are looked up by the frame's package and file name under the roots {@code CHALK_SOURCE_PATH} names
 * (directories separated by the platform's path separator), else {@code src/main/java} and {@code src/test/java} of the
 * working directory: the project a developer runs from. A frame is only text from the server, so it is trusted for
 * nothing: only a Java class and file name are accepted, and a file is read only inside a root.
 */
public final class SourceContext {

    /** The variable naming source roots. */
    public static final String ENV_SOURCE_PATH = "CHALK_SOURCE_PATH";

    private static final int AROUND = 2;
    private static final int MAX_FRAMES = 8; // a deep trace stays readable
    private static final long MAX_FILE_BYTES = 1 << 20;
    private static final Pattern FRAME = Pattern.compile(
            "^(\\s*at\\s+)(?:\\S*/)?((?:[\\p{javaJavaIdentifierStart}][\\p{javaJavaIdentifierPart}]*\\.)*)"
                    + "[\\p{javaJavaIdentifierStart}][\\p{javaJavaIdentifierPart}]*\\.[\\p{javaJavaIdentifierPart}<>]+"
                    + "\\(([\\p{javaJavaIdentifierStart}][\\p{javaJavaIdentifierPart}]*\\.java):(\\d{1,7})\\)\\s*$");

    private final List<Path> roots;

    private SourceContext(List<Path> roots) {
        this.roots = List.copyOf(roots);
    }

    /**
     * Looks up sources under the given directories.
     *
     * @param roots source roots, such as {@code src/main/java}
     * @return the lookup
     */
    public static SourceContext of(List<Path> roots) {
        List<Path> absolute = new ArrayList<>();
        for (Path root : roots) {
            absolute.add(root.toAbsolutePath().normalize());
        }
        return new SourceContext(absolute);
    }

    /**
     * Looks up sources where {@code CHALK_SOURCE_PATH} says, else under the working directory's {@code src/main/java}
     * and {@code src/test/java}.
     *
     * @param env environment variables
     * @return the lookup
     */
    public static SourceContext fromEnv(Map<String, String> env) {
        String path = env.get(ENV_SOURCE_PATH);
        List<Path> roots = new ArrayList<>();
        if (path != null && !path.isBlank()) {
            for (String root : path.split(Pattern.quote(File.pathSeparator))) {
                if (!root.isBlank()) {
                    roots.add(Path.of(root.strip()));
                }
            }
        } else {
            roots.add(Path.of("src", "main", "java"));
            roots.add(Path.of("src", "test", "java"));
        }
        return of(roots);
    }

    /**
     * The traceback with numbered source lines under each frame whose source is found.
     *
     * @param traceback a Java traceback, one {@code at ...} frame a line
     * @return the same text when no source is found
     */
    public String annotate(String traceback) {
        StringBuilder out = new StringBuilder(traceback.length());
        int annotated = 0;
        for (String line : traceback.split("\n", -1)) {
            out.append(line).append('\n');
            if (annotated >= MAX_FRAMES) {
                continue;
            }
            Matcher frame = FRAME.matcher(line);
            if (!frame.matches()) {
                continue;
            }
            String pkg = frame.group(2);
            String file = frame.group(3);
            int number = Integer.parseInt(frame.group(4));
            String context = context(pkg.replace('.', '/') + file, number, frame.group(1));
            if (!context.isEmpty()) {
                out.append(context);
                annotated++;
            }
        }
        out.setLength(out.length() - 1); // the split's last piece had no line break
        return out.toString();
    }

    /** The numbered lines around {@code number} of the first root holding {@code relative}, or nothing. */
    private String context(String relative, int number, String indent) {
        for (Path root : roots) {
            Path file = root.resolve(relative).normalize();
            if (!file.startsWith(root) || !Files.isRegularFile(file)) {
                continue;
            }
            List<String> lines;
            try {
                if (Files.size(file) > MAX_FILE_BYTES) {
                    continue;
                }
                lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            } catch (IOException | RuntimeException e) {
                continue; // unreadable or not UTF-8: the traceback is shown without it
            }
            if (number < 1 || number > lines.size()) {
                continue; // a different version of the file: its lines would mislead
            }
            String pad = indent.replaceAll("\\S", " "); // under the frame, whatever its indentation
            int width = String.valueOf(Math.min(lines.size(), number + AROUND)).length();
            StringBuilder out = new StringBuilder();
            for (int n = Math.max(1, number - AROUND); n <= Math.min(lines.size(), number + AROUND); n++) {
                out.append(pad)
                        .append(n == number ? "  > " : "    ")
                        .append(String.format("%" + width + "d", n))
                        .append(" | ")
                        .append(lines.get(n - 1).stripTrailing())
                        .append('\n');
            }
            return out.toString();
        }
        return "";
    }

    @Override
    public String toString() {
        return "SourceContext" + roots;
    }
}
