package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Looks up a path as a process whose root is a sandbox's would see it: the kernel resolves every link as if that
 * root were {@code /} ({@code openat2(RESOLVE_IN_ROOT)}), so a link a sandbox swaps in, absolute or {@code ../..},
 * never leads the server onto the host's own files.
 */
public final class InRootLookup {

    private static final FileCalls C = FileCalls.INSTANCE;

    private InRootLookup() {}

    /** What {@link #find} found: a directory, a file, or something else, and whether some execute bit is set. */
    public record Found(BeneathRoot.Type type, boolean executable) {}

    /**
     * What is at {@code path} inside {@code root}; empty when nothing is there (or the root is gone).
     *
     * @param root a sandbox's root, e.g. {@code /proc/<init pid>/root}
     */
    public static Optional<Found> find(Path root, String path) {
        int rootFd;
        try {
            rootFd = C.open(
                    Descriptors.cString(root.toString()),
                    FileCalls.O_PATH | FileCalls.O_DIRECTORY | FileCalls.O_CLOEXEC,
                    0);
        } catch (LastErrorException e) {
            return Optional.empty();
        }
        try {
            int fd = Descriptors.openat2(
                    rootFd,
                    Descriptors.cString(path.isEmpty() ? "." : path),
                    FileCalls.O_PATH | FileCalls.O_CLOEXEC,
                    0,
                    FileCalls.RESOLVE_IN_ROOT | FileCalls.RESOLVE_NO_MAGICLINKS);
            try {
                int mode = Descriptors.statx(fd).getShort(Descriptors.STATX_MODE) & 0xffff;
                BeneathRoot.Type type = switch (mode & FileCalls.S_IFMT) {
                    case FileCalls.S_IFREG -> BeneathRoot.Type.FILE;
                    case FileCalls.S_IFDIR -> BeneathRoot.Type.DIRECTORY;
                    default -> BeneathRoot.Type.OTHER;
                };
                return Optional.of(new Found(type, (mode & 0111) != 0));
            } finally {
                Descriptors.closeQuietly(fd);
            }
        } catch (LastErrorException e) {
            return Optional.empty();
        } finally {
            Descriptors.closeQuietly(rootFd);
        }
    }
}
