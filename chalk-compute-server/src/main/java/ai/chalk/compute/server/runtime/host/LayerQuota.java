package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.nio.file.Path;

/**
 * A size-limited file system of its own under a sandbox's directory (a tmpfs with {@code size=}), so that one
 * sandbox writing without end fills its own quota ({@code ENOSPC}) rather than the server's disk, where the store,
 * the other sandboxes and the host live. Its pages count against the memory cgroup of whoever writes them, the
 * sandbox. A side effect worth having: the sandbox's root is the root of a file system of its own, so
 * {@code /proc/self/mountinfo} inside shows no host path for it.
 */
public final class LayerQuota {

    private LayerQuota() {}

    /**
     * Mounts a tmpfs of {@code bytes} at {@code dir} (an existing empty directory), mode 0700, set-id bits ignored.
     * Device nodes stay usable on it: the runtime makes the sandbox's own there ({@link SandboxDevices}), and nothing
     * in a sandbox can make one (no capabilities) or use one in its layer (mounted {@code nodev} inside).
     */
    public static void mount(Path dir, long bytes) throws IOException {
        try {
            FileSystemCalls.INSTANCE.mount(
                    "chalk-layer",
                    dir.toString(),
                    "tmpfs",
                    FileSystemCalls.MS_NOSUID,
                    "size=" + bytes + ",nr_inodes=" + inodes(bytes) + ",mode=0700");
        } catch (LastErrorException e) {
            throw new IOException(
                    "cannot mount the " + bytes + "-byte file system of " + dir + " (errno " + e.getErrorCode() + ")");
        }
    }

    /** The fewest files a layer holds whatever its size. */
    static final long MIN_INODES = 16_384;

    /** The bytes of layer per file it may hold. */
    static final long BYTES_PER_INODE = 16 << 10;

    /**
     * The files a layer of {@code bytes} may hold: one per {@value #BYTES_PER_INODE} bytes (262,144 for the default
     * 4 GiB), at least {@value #MIN_INODES}. A tmpfs otherwise allows half the host's pages in files, and an empty file
     * costs no byte of the quota but a kilobyte of kernel memory, which hosts without kernel memory accounting charge
     * to no sandbox: millions of them per sandbox were gigabytes of the host's.
     */
    static long inodes(long bytes) {
        return Math.max(MIN_INODES, bytes / BYTES_PER_INODE);
    }

    /** Detaches what is mounted at {@code dir}; its contents go with it. Quiet when nothing is mounted there. */
    public static void unmount(Path dir) {
        FileSystemCalls.detach(dir);
    }
}
