package ai.chalk.compute.server.exec;

/**
 * Where a running process's output goes. Called from one pump thread per stream; an
 * implementation may block to apply backpressure, which stalls only this process's pipe.
 */
@FunctionalInterface
public interface OutputSink {

    /** Accepts one chunk; {@code data} is owned by the sink from now on. */
    void output(OutputStreamKind stream, byte[] data);
}
