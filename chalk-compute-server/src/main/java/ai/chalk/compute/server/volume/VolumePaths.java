package ai.chalk.compute.server.volume;

import ai.chalk.compute.server.error.ComputeException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Checks volume names, and turns a client's path inside a volume into a normalized relative path:
 * no {@code ..}, no absolute escape. (Links on the way are refused where the path is resolved.)
 */
final class VolumePaths {

    private static final Pattern NAME = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$");

    private VolumePaths() {}

    /** Checks a volume name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63. */
    static String checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw ComputeException.invalid("volume name \"" + name + "\" is not valid: use 1-63"
                    + " letters, digits, '.', '_' or '-', starting with a letter or digit");
        }
        return name;
    }

    /**
     * {@code path} as a relative path inside the volume ({@code a/b/c}): no {@code ..}, nothing absolute, no NUL.
     * Links are not looked at here: {@link ai.chalk.compute.server.runtime.host.BeneathRoot} refuses them when the
     * path is used, in the same system call that resolves it, since a sandbox can swap one in at any moment.
     */
    static String relative(String path) {
        if (path == null || path.isBlank() || path.indexOf('\0') >= 0) {
            throw invalid(path, "give a file path inside the volume, e.g. data/train.csv");
        }
        List<String> parts = new ArrayList<>();
        for (String part : path.split("/+")) {
            if (part.equals("..")) {
                throw invalid(path, "'..' may not appear in volume paths");
            }
            if (!part.isEmpty() && !part.equals(".")) {
                parts.add(part);
            }
        }
        if (parts.isEmpty()) {
            throw invalid(path, "it names the volume itself, not a file in it");
        }
        return String.join("/", parts);
    }

    private static RuntimeException invalid(String path, String why) {
        return ComputeException.invalid("volume path \"" + path + "\" is not valid: " + why);
    }
}
