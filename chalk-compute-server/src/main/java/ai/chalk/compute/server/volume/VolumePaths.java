package ai.chalk.compute.server.volume;

import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * Turns a client's path inside a volume into a host path that cannot leave the volume: no
 * {@code ..}, no absolute escape, and no symbolic link on the way (a sandbox that mounts the
 * volume can plant links; they are refused rather than followed).
 */
final class VolumePaths {

    private static final Pattern NAME = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$");

    private VolumePaths() {
    }

    /** Checks a volume name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63. */
    static String checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw Status.INVALID_ARGUMENT.withDescription("volume name \"" + name + "\" is not valid: use 1-63"
                    + " letters, digits, '.', '_' or '-', starting with a letter or digit").asRuntimeException();
        }
        return name;
    }

    /** The host path of {@code path} inside {@code root}; every existing component is checked not to be a link. */
    static Path resolve(Path root, String path) {
        if (path == null || path.isBlank() || path.indexOf('\0') >= 0) {
            throw invalid(path, "give a file path inside the volume, e.g. data/train.csv");
        }
        String relative = path.replaceFirst("^/+", "");
        if (relative.isEmpty()) {
            throw invalid(path, "it names the volume itself, not a file in it");
        }
        Path current = root;
        for (String part : relative.split("/+")) {
            if (part.equals("..")) {
                throw invalid(path, "'..' may not appear in volume paths");
            }
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            current = current.resolve(part);
            if (Files.isSymbolicLink(current)) {
                throw Status.FAILED_PRECONDITION.withDescription("volume path \"" + path
                        + "\" goes through a symbolic link (" + root.relativize(current)
                        + "); links are not followed outside a sandbox").asRuntimeException();
            }
        }
        if (current.equals(root) || !current.normalize().startsWith(root)) {
            throw invalid(path, "it does not name a file inside the volume");
        }
        return current;
    }

    /** Whether {@code p} is a regular file, not following links. */
    static boolean isFile(Path p) {
        return Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS);
    }

    private static RuntimeException invalid(String path, String why) {
        return Status.INVALID_ARGUMENT.withDescription("volume path \"" + path + "\" is not valid: " + why)
                .asRuntimeException();
    }
}
