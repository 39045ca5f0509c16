package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.host.DirectoryChanges;
import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;

/**
 * What under the host's {@code /etc} other users may not read, as each sandbox starts: files to mask with
 * {@code /dev/null}, directories to mask with an empty read-only directory (a sandbox's root, uid 0 without
 * capabilities, still has the owner's access to root's files). A walk of {@code /etc} (here 155 directories, 1,400
 * entries) cost every create a few milliseconds of the server's CPU, a tenth of a create; it is now walked again only
 * when one of the directories it read reports a change since (inotify: an entry created, removed, renamed, or its mode
 * or owner changed), which the kernel records before the change's own call returns. Where a directory cannot be
 * watched, every create walks.
 */
final class EtcMasks implements AutoCloseable {

    /** Files and directories to mask, as absolute paths. */
    record Masks(List<String> files, List<String> dirs) {}

    private final Path etc;
    private Masks last;
    /** Watches every directory the last walk read; null when none holds (each create walks). */
    private DirectoryChanges changes;

    private boolean closed;

    EtcMasks(Path etc) {
        this.etc = etc;
    }

    /** What to mask now. */
    synchronized Masks current() {
        if (last != null && changes != null && !changes.changed()) {
            return last;
        }
        if (changes != null) {
            changes.close();
        }
        changes = closed ? null : DirectoryChanges.open().orElse(null);
        List<String> files = new ArrayList<>();
        List<String> dirs = new ArrayList<>();
        boolean watched = walk(etc, files, dirs);
        if (!watched && changes != null) {
            changes.close();
            changes = null;
        }
        last = new Masks(List.copyOf(files), List.copyOf(dirs));
        return last;
    }

    /**
     * Adds what under {@code dir} others may not read. Depth first, links never followed, what cannot be read skipped:
     * one {@code lstat} per entry, with its permissions ({@code Files.walkFileTree} hands out attributes without them,
     * which cost every entry a second {@code lstat}). Each directory is watched before it is read.
     *
     * @return whether every directory read is watched
     */
    private boolean walk(Path dir, List<String> files, List<String> dirs) {
        boolean watched = changes != null && changes.watch(dir);
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                PosixFileAttributes attrs;
                try {
                    attrs = Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                } catch (IOException e) {
                    continue; // gone meanwhile
                }
                if (attrs.isDirectory()) {
                    if (attrs.permissions().contains(PosixFilePermission.OTHERS_EXECUTE)) {
                        watched &= walk(p, files, dirs);
                    } else {
                        dirs.add(p.toString());
                    }
                } else if (attrs.isRegularFile() && !attrs.permissions().contains(PosixFilePermission.OTHERS_READ)) {
                    files.add(p.toString());
                }
            }
        } catch (IOException | DirectoryIteratorException e) {
            // an unreadable directory (an unreadable /etc leaves only the fixed masks)
        }
        return watched;
    }

    /** Gives back the inotify descriptor; later calls walk each time. */
    @Override
    public synchronized void close() {
        closed = true;
        if (changes != null) {
            changes.close();
            changes = null;
        }
    }
}
