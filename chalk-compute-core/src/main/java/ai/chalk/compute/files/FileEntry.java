package ai.chalk.compute.files;

import java.nio.file.attribute.PosixFilePermission;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A file, directory or link in a sandbox, as {@link SandboxFiles#list(String)} and
 * {@link SandboxFiles#stat(String)} report it. A symbolic link is described itself (type
 * {@link FileType#SYMLINK}, its size is the length of its target), not the file it points to.
 *
 * <pre>{@code
 * for (FileEntry entry : sandbox.files().list("/data")) {
 *     System.out.println(entry.name() + " " + entry.type() + " " + entry.size());
 * }
 * }</pre>
 *
 * @param name          the file's name, without its directory
 * @param path          its path, as the directory was given plus the name (relative paths are
 *                      relative to the sandbox's working directory)
 * @param type          what kind of file it is
 * @param size          its size in bytes
 * @param mode          its permission bits, for example {@code 0644} (including set-user-id, set-group-id
 *                      and sticky bits, {@code 01777} for {@code /tmp})
 * @param modified      when its content was last modified
 * @param symlinkTarget for a symbolic link, the path it points to
 */
public record FileEntry(
        String name,
        String path,
        FileType type,
        long size,
        int mode,
        Instant modified,
        Optional<String> symlinkTarget) {

    /** Checks that no component is {@code null}. */
    public FileEntry {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(modified, "modified");
        Objects.requireNonNull(symlinkTarget, "symlinkTarget");
    }

    /** Whether this is a regular file. */
    public boolean isFile() {
        return type == FileType.FILE;
    }

    /** Whether this is a directory. */
    public boolean isDirectory() {
        return type == FileType.DIRECTORY;
    }

    /** Whether this is a symbolic link. */
    public boolean isSymlink() {
        return type == FileType.SYMLINK;
    }

    /** The read, write and execute permissions of {@link #mode()}, as Java's file API names them. */
    public Set<PosixFilePermission> permissions() {
        Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
        PosixFilePermission[] byBit = {
            PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
            PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
        };
        for (int bit = 0; bit < byBit.length; bit++) {
            if ((mode & (1 << bit)) != 0) {
                permissions.add(byBit[bit]);
            }
        }
        return permissions;
    }
}
