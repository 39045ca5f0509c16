package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How much of a disk the server keeps free of what tenants make it write (image build steps, unpacked code): its store,
 * logs and the host need room to go on when a tenant writes without end.
 */
public final class DiskReserve {

    /** The least kept free: {@value} bytes, or a fiftieth of the disk where that is more. */
    public static final long MIN_BYTES = 1L << 30;

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

    /** {@link #state(long, long)} of the disk holding {@code path}, now. */
    public static String state(Path path, long reserve) throws IOException {
        return state(Files.getFileStore(path).getUsableSpace(), reserve);
    }

    /** Whether the disk holding {@code path} has less than {@code reserve} bytes free for this process. */
    public static boolean below(Path path, long reserve) throws IOException {
        return Files.getFileStore(path).getUsableSpace() < reserve;
    }
}
