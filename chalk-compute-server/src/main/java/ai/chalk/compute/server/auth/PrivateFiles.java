package ai.chalk.compute.server.auth;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Files that hold keys and secrets: created with mode 0600 from the first byte (never world-readable for an instant),
 * replaced atomically, and refused when they are a link or readable by others (someone else put them there, or
 * loosened them).
 */
final class PrivateFiles {

    private PrivateFiles() {}

    /** Makes {@code dir} (mode 0700) unless it exists. */
    static Path directory(Path dir) throws IOException {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(
                    dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        }
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        return dir;
    }

    /** Writes {@code text} to {@code file} through a fresh 0600 file renamed over it. */
    static void write(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        Files.deleteIfExists(tmp);
        Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(
                tmp,
                text,
                StandardCharsets.UTF_8,
                StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.SYNC);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * The text of {@code file}, which must be a regular file (not a link) that only its owner may read.
     *
     * @throws IOException saying what is wrong with the file and how to fix it
     */
    static String read(Path file) throws IOException {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(file + " is not a regular file; remove it and restart the server");
        }
        String mode = PosixFilePermissions.toString(Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS));
        if (!mode.endsWith("------")) {
            throw new IOException(file + " is readable by other users (mode " + mode + "): its keys must be treated"
                    + " as leaked; remove the file (new keys are made) or chmod 600 it if you are sure");
        }
        return Files.readString(file, StandardCharsets.UTF_8);
    }
}
