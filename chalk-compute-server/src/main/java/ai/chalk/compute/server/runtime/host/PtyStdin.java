package ai.chalk.compute.server.runtime.host;

import java.io.IOException;
import java.io.OutputStream;

/**
 * A terminal's input: closing it types end-of-file (Ctrl-D) instead of closing the terminal, which would hang the
 * session up.
 */
public final class PtyStdin extends ClosableStdin {

    private static final int EOT = 4;

    /** Writes to the terminal's input {@code out}. */
    public PtyStdin(OutputStream out) {
        super(out);
    }

    @Override
    protected void end() throws IOException {
        out.write(EOT);
        out.flush();
    }
}
