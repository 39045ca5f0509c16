package ai.chalk.compute.server.runtime.docker;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.concurrent.CompletableFuture;

/**
 * One output stream of an exec, between the thread that reads the engine's attach stream and the caller: a bounded
 * buffer, so that a caller who does not read holds up the process (its writes block, as on a pipe) rather than
 * filling the server's memory. Closing the reading side discards whatever comes later.
 */
final class OutputPipe {

    static final int CAPACITY = 256 * 1024;

    private final byte[] buf = new byte[CAPACITY];
    private int head;
    private int size;
    private boolean finished;
    private boolean closed;
    /** Completes when the reader saw end-of-file or closed its stream. */
    final CompletableFuture<Void> eof = new CompletableFuture<>();

    private final InputStream input = new In();

    /** A pipe that is already at end-of-file (stderr of a PTY process). */
    static OutputPipe empty() {
        OutputPipe p = new OutputPipe();
        p.finish();
        p.eof.complete(null);
        return p;
    }

    /**
     * Appends bytes, waiting for room; returns at once, discarding them, when the reader closed its stream or the
     * output was finished (which also releases a writer waiting for room).
     */
    void write(byte[] b, int off, int len) throws InterruptedIOException {
        synchronized (this) {
            while (len > 0) {
                if (closed || finished) {
                    return;
                }
                if (size == CAPACITY) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new InterruptedIOException("interrupted while delivering output");
                    }
                    continue;
                }
                int tail = (head + size) % CAPACITY;
                int n = Math.min(len, Math.min(CAPACITY - size, CAPACITY - tail));
                System.arraycopy(b, off, buf, tail, n);
                size += n;
                off += n;
                len -= n;
                notifyAll();
            }
        }
    }

    /** Marks the end of the output; the reader sees end-of-file once it has read what came before. */
    synchronized void finish() {
        finished = true;
        notifyAll();
    }

    synchronized boolean finished() {
        return finished;
    }

    InputStream input() {
        return input;
    }

    private final class In extends InputStream {
        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            synchronized (OutputPipe.this) {
                while (size == 0) {
                    if (closed) {
                        throw new IOException("stream closed");
                    }
                    if (finished) {
                        eof.complete(null);
                        return -1;
                    }
                    try {
                        OutputPipe.this.wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new InterruptedIOException("interrupted while reading output");
                    }
                }
                int n = Math.min(len, Math.min(size, CAPACITY - head));
                System.arraycopy(buf, head, b, off, n);
                head = (head + n) % CAPACITY;
                size -= n;
                OutputPipe.this.notifyAll();
                return n;
            }
        }

        @Override
        public int available() {
            synchronized (OutputPipe.this) {
                return size;
            }
        }

        @Override
        public void close() {
            synchronized (OutputPipe.this) {
                closed = true;
                size = 0;
                OutputPipe.this.notifyAll();
            }
            eof.complete(null);
        }
    }
}
