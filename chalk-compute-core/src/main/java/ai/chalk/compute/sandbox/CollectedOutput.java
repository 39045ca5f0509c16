package ai.chalk.compute.sandbox;

import java.util.ArrayList;
import java.util.List;

/**
 * The stdout and stderr an exec collects, bounded: kept as the chunks they arrived in (no buffer that doubles as it
 * grows), joined once when the result is made.
 */
final class CollectedOutput {

    private final long limit;
    private final List<byte[]> stdout = new ArrayList<>();
    private final List<byte[]> stderr = new ArrayList<>();
    private long stdoutSize;
    private long stderrSize;

    /** The most one Java array holds: what a stream's bytes are returned in. */
    private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

    /** @param limit the most bytes of stdout and stderr together; at most what one array holds is kept */
    CollectedOutput(long limit) {
        this.limit = Math.min(limit, MAX_ARRAY);
    }

    /** The limit, in bytes. */
    long limit() {
        return limit;
    }

    /** Adds a chunk of stdout; false, keeping nothing, when it would go over the limit. */
    boolean addStdout(byte[] chunk) {
        if (!fits(chunk)) {
            return false;
        }
        stdout.add(chunk);
        stdoutSize += chunk.length;
        return true;
    }

    /** Adds a chunk of stderr; false, keeping nothing, when it would go over the limit. */
    boolean addStderr(byte[] chunk) {
        if (!fits(chunk)) {
            return false;
        }
        stderr.add(chunk);
        stderrSize += chunk.length;
        return true;
    }

    private boolean fits(byte[] chunk) {
        return chunk.length <= limit - stdoutSize - stderrSize;
    }

    byte[] stdout() {
        return join(stdout, stdoutSize);
    }

    byte[] stderr() {
        return join(stderr, stderrSize);
    }

    private static byte[] join(List<byte[]> chunks, long size) {
        byte[] all = new byte[Math.toIntExact(size)];
        int at = 0;
        for (byte[] c : chunks) {
            System.arraycopy(c, 0, all, at, c.length);
            at += c.length;
        }
        return all;
    }
}
