package ai.chalk.compute.server.runtime.host;

import java.io.Closeable;

/**
 * A Unix socket held by descriptor (see {@link BeneathRoot#pinSocket}): a client connects through its
 * {@code /proc/self/fd} entry, so a sandbox swapping the socket's name for a link to another socket does not
 * redirect the connection. Close it once no new connection is needed.
 */
public final class PinnedSocket implements Closeable {
    private final int fd;
    private boolean closed;

    PinnedSocket(int fd) {
        this.fd = fd;
    }

    /** The path to connect to, valid in this process while the pin is open. */
    public String address() {
        return "/proc/self/fd/" + fd;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            Descriptors.closeQuietly(fd);
        }
    }
}
