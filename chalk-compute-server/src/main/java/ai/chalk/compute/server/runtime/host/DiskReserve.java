package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How much of a disk the server keeps free of what tenants make it write (image build steps, unpacked code, snapshots):
 * its store, logs and the host need room to go on when a tenant writes without end. Room is bytes and files (inodes):
 * empty files cost a file system of fixed inodes nothing of its bytes, and a sandbox of half a million empty files,
 * snapshotted again and again, used up the data disk's files while the byte reserve held.
 */
public final class DiskReserve {

    /** The least kept free: {@value} bytes, or a fiftieth of the disk where that is more. */
    public static final long MIN_BYTES = 1L << 30;

    /** The least number of files (inodes) kept free: {@value}, or a fiftieth of the disk's where that is more. */
    public static final long MIN_FILES = 100_000;

    private DiskReserve() {}

    /** The reserve of the disk holding {@code path}: {@link #MIN_BYTES} or a fiftieth of its size, the larger. */
    public static long of(Path path) throws IOException {
        return Math.max(MIN_BYTES, Files.getFileStore(path).getTotalSpace() / 50);
    }

    /** What a refusal says of the disk: {@code the server's disk has N MiB free and keeps M MiB of it for itself}. */
    public static String state(long free, long reserve) {
        return "the server's disk has " + free / (1 << 20) + " MiB free and keeps " + reserve / (1 << 20)
                + " MiB of it for itself";
    }

    /** {@link #state(long, long)} of the disk holding {@code path}, now, and its files when they are short. */
    public static String state(Path path, long reserve) throws IOException {
        String bytes = state(Files.getFileStore(path).getUsableSpace(), reserve);
        FileCounts files = FileCounts.of(path);
        return files.belowReserve()
                ? bytes + ", and " + files.free() + " files (inodes) free of its " + files.total() + ", keeping "
                        + files.reserve() + " for itself"
                : bytes;
    }

    /**
     * Whether the disk holding {@code path} has less than {@code reserve} bytes free for this process, or fewer free
     * files (inodes) than it keeps ({@link #MIN_FILES}, or a fiftieth of its files).
     */
    public static boolean below(Path path, long reserve) throws IOException {
        return Files.getFileStore(path).getUsableSpace() < reserve
                || FileCounts.of(path).belowReserve();
    }

    /**
     * The files (inodes) of the file system holding a path: in all, and free for this process; a file system without
     * a fixed number (btrfs) reports none, and has no reserve.
     */
    private record FileCounts(long total, long free) {

        static FileCounts of(Path path) throws IOException {
            try (com.sun.jna.Memory buf = new com.sun.jna.Memory(256)) {
                FileSystemCalls.INSTANCE.statvfs(path.toString(), buf);
                // struct statvfs (LP64): f_bsize, f_frsize, f_blocks, f_bfree, f_bavail, f_files, f_ffree, f_favail
                return new FileCounts(buf.getLong(40), buf.getLong(56));
            } catch (com.sun.jna.LastErrorException e) {
                throw new IOException("cannot read the file system of " + path + " (errno " + e.getErrorCode() + ")");
            }
        }

        long reserve() {
            return Math.max(MIN_FILES, total / 50);
        }

        boolean belowReserve() {
            return total > 0 && free < reserve();
        }
    }
}
