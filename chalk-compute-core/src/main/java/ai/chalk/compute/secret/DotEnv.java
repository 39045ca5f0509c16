package ai.chalk.compute.secret;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a dotenv file: {@code KEY=value} lines, {@code #} comments and blank lines skipped, an optional
 * {@code export } prefix, values optionally in single quotes (taken as written) or double quotes (with {@code \n},
 * {@code \"} and {@code \\} escapes). Errors name the file and line, never a value.
 */
final class DotEnv {

    private DotEnv() {}

    static Map<String, String> read(Path path) {
        List<String> lines;
        try {
            lines = Files.readAllLines(path, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot read the dotenv file " + path + ": " + e.getClass().getSimpleName(), e);
        }
        Map<String, String> values = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            if (line.startsWith("export ")) {
                line = line.substring("export ".length()).strip();
            }
            int eq = line.indexOf('=');
            String key = eq < 0 ? "" : line.substring(0, eq).strip();
            if (!Secret.ENV_NAME.matcher(key).matches()) {
                throw new IllegalArgumentException(
                        path + " line " + (i + 1) + " is not of the form KEY=value with KEY" + " a variable name");
            }
            values.put(key, value(line.substring(eq + 1).strip(), path, i + 1));
        }
        return values;
    }

    private static String value(String raw, Path path, int line) {
        if (raw.startsWith("'")) {
            int end = raw.indexOf('\'', 1);
            if (end < 0) {
                throw new IllegalArgumentException(path + " line " + line + ": the single quote is not closed");
            }
            return raw.substring(1, end);
        }
        if (raw.startsWith("\"")) {
            StringBuilder out = new StringBuilder();
            for (int i = 1; i < raw.length(); i++) {
                char c = raw.charAt(i);
                if (c == '"') {
                    return out.toString();
                }
                if (c == '\\' && i + 1 < raw.length()) {
                    char next = raw.charAt(++i);
                    out.append(next == 'n' ? '\n' : next == 't' ? '\t' : next);
                } else {
                    out.append(c);
                }
            }
            throw new IllegalArgumentException(path + " line " + line + ": the double quote is not closed");
        }
        int comment = raw.indexOf(" #");
        return (comment < 0 ? raw : raw.substring(0, comment)).strip();
    }
}
