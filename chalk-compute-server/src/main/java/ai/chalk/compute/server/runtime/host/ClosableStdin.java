package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.io.OutputStream;

/** A process's stdin that refuses writes once closed, and ends the input (its own way) only once. */
public abstract class ClosableStdin extends OutputStream {

    /** Where the writes go. */
    protected final OutputStream out;

    private boolean closed;

    protected ClosableStdin(OutputStream out) {
        this.out = out;
    }

    @Override
    public synchronized void write(int b) throws IOException {
        ensureOpen();
        out.write(b);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
        ensureOpen();
        out.write(b, off, len);
    }

    @Override
    public synchronized void flush() throws IOException {
        out.flush();
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException("stdin is closed");
        }
    }

    @Override
    public final synchronized void close() throws IOException {
        if (!closed) {
            closed = true;
            end();
        }
    }

    /** Ends the process's input; called once, on the first {@link #close()}. */
    protected abstract void end() throws IOException;
}
