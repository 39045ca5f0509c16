package ai.chalk.compute.server.runtime.local;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The empty directories bubblewrap binds read-only over the directories a sandbox must not see
 * ({@link ai.chalk.compute.server.runtime.local.mount.MountOp.MaskDir}): one per mode, made in the sandbox's state
 * directory, on its layer's file system, beside its device nodes.
 *
 * <p>Not a tmpfs per mask, as before: each tmpfs is a file system of its own, and the kernel visits the caches of every
 * file system of the host each time a memory cgroup goes (reparenting them, under the lock that every cgroup's
 * creation and removal takes), so each one made every terminate dearer with every sandbox alive. Their file system is
 * the layer's, whose root is not the host's, so the sandbox's {@code /proc/self/mountinfo} names no host path for them;
 * bound read-only (a sandbox cannot remount: its mount namespace belongs to the host), they stay empty.
 */
final class EmptyDirs {

    /** The mode of a mask over a directory no one may list ({@code /etc/ssl/private}). */
    static final int CLOSED = 0700;
    /** The mode of a mask over a directory that stays listable, and empty ({@code /proc/acpi}). */
    static final int READABLE = 0555;

    private EmptyDirs() {}

    /** Creates the empty directories in the state directory {@code dir}. */
    static void create(Path dir) throws IOException {
        for (int mode : new int[] {CLOSED, READABLE}) {
            Path empty = Files.createDirectory(in(dir, mode));
            Files.setAttribute(empty, "unix:mode", mode); // whatever the umask
        }
    }

    /** The empty directory of {@code mode} ({@link #CLOSED} or {@link #READABLE}) in state directory {@code dir}. */
    static Path in(Path dir, int mode) {
        if (mode != CLOSED && mode != READABLE) {
            throw new IllegalArgumentException("no empty directory of mode " + Integer.toOctalString(mode));
        }
        return dir.resolve(String.format("empty-%04o", mode));
    }
}
