package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** The few descriptor calls that {@link BeneathRoot}, {@link InRootLookup} and {@link PinnedSocket} share. */
final class Descriptors {

    private static final FileCalls C = FileCalls.INSTANCE;
    /** {@code stx_mode}'s offset in {@code struct statx}. */
    static final int STATX_MODE = 28;

    private Descriptors() {}

    /** {@code openat2(dir, path, {flags, mode, resolve})}; the kernel resolves the whole path in one call. */
    static int openat2(int dir, byte[] path, int flags, int mode, long resolve) {
        Memory how = new Memory(24); // struct open_how: u64 flags, u64 mode, u64 resolve
        how.setLong(0, flags & 0xffffffffL);
        how.setLong(8, mode);
        how.setLong(16, resolve);
        return (int) C.syscall(FileCalls.SYS_OPENAT2, dir, path, how, 24);
    }

    /** The {@code struct statx} of an open descriptor (of any kind, {@code O_PATH} too). */
    static Memory statx(int fd) {
        Memory buf = new Memory(256);
        C.statx(fd, cString(""), FileCalls.AT_EMPTY_PATH, FileCalls.STATX_BASIC_STATS, buf);
        return buf;
    }

    /** {@code s} as a NUL-terminated UTF-8 string. */
    static byte[] cString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return Arrays.copyOf(b, b.length + 1);
    }

    static void closeQuietly(int fd) {
        try {
            C.close(fd);
        } catch (LastErrorException e) {
            // nothing to do about a failed close of a descriptor only read from
        }
    }
}
