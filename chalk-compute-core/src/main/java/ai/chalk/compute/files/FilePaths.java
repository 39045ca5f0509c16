package ai.chalk.compute.files;

import java.util.Objects;

/**
 * Paths as the commands in the sandbox and the messages to the user see them: commands get relative paths with
 * {@code ./} in front so that no name is read as an option, and messages quote paths with control characters escaped.
 */
final class FilePaths {

    private FilePaths() {}

    static void checkPath(String path) {
        Objects.requireNonNull(path, "path");
        if (path.isEmpty()) {
            throw new IllegalArgumentException("the path must not be empty");
        }
        if (path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("a path cannot contain NUL: " + quote(path));
        }
    }

    /**
     * The path as passed to commands: relative paths get {@code ./} in front, so that no command
     * takes a name starting with {@code -} (or {@code find} a name like {@code !}) for an option.
     */
    static String arg(String path) {
        checkPath(path);
        return path.startsWith("/") ? path : "./" + path;
    }

    /** The parent directory of a path as {@link #arg} returns it. */
    static String parent(String argPath) {
        String p = argPath;
        while (p.length() > 1 && p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        int slash = p.lastIndexOf('/');
        if (slash < 0) {
            return ".";
        }
        return slash == 0 ? "/" : p.substring(0, slash);
    }

    /** The last component of a path, {@code /} for the root. */
    static String baseName(String path) {
        String p = path;
        while (p.length() > 1 && p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        if (p.equals("/")) {
            return "/";
        }
        int slash = p.lastIndexOf('/');
        return slash < 0 ? p : p.substring(slash + 1);
    }

    /** A path in quotes for messages, with control characters escaped so a name with a newline stays readable. */
    static String quote(String path) {
        StringBuilder s = new StringBuilder("'");
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            switch (c) {
                case '\n' -> s.append("\\n");
                case '\t' -> s.append("\\t");
                case '\r' -> s.append("\\r");
                case '\\' -> s.append("\\\\");
                case '\'' -> s.append("\\'");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
                }
            }
        }
        return s.append('\'').toString();
    }
}
