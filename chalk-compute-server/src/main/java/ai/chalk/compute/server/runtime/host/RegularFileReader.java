package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.io.IOException;
import java.io.InputStream;

/** A regular file opened for reading by {@link BeneathRoot#openFile}: its size when opened, and its bytes. */
public final class RegularFileReader extends InputStream {
    private static final FileCalls C = FileCalls.INSTANCE;
    private static final int CHUNK = 64 << 10;

    private final int fd;
    private final long size;
    private final byte[] chunk = new byte[CHUNK];
    private boolean closed;

    RegularFileReader(int fd, long size) {
        this.fd = fd;
        this.size = size;
    }

    /** The file's size when it was opened. */
    public long size() {
        return size;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (closed) {
            throw new IOException("stream closed");
        }
        if (len == 0) {
            return 0;
        }
        while (true) {
            try {
                int n = (int) C.read(fd, chunk, Math.min(len, chunk.length));
                if (n == 0) {
                    return -1;
                }
                System.arraycopy(chunk, 0, b, off, n);
                return n;
            } catch (LastErrorException e) {
                if (e.getErrorCode() != FileCalls.EINTR) {
                    throw new IOException("cannot read the file: " + e.getMessage(), e);
                }
            }
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Descriptors.closeQuietly(fd);
        }
    }
}
