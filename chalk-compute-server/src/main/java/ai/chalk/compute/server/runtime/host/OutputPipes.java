package ai.chalk.compute.server.runtime.host;

import com.sun.jna.LastErrorException;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * The standard output and error of a host process as pipes the server makes and holds, rather than the JDK's
 * ({@code Redirect.PIPE}). The JDK closes its own as the process exits, unless a reader is blocked in {@code read} at
 * that moment: what the command left behind ({@code daemon &}, a shell's background job) then wrote into a pipe no one
 * could read, lost its output and died of {@code SIGPIPE} at its first write, depending on whether the server's
 * readers had started before the command ended (a few milliseconds either way). These stay open until the server
 * closes its readers, whoever exits first.
 */
public final class OutputPipes implements AutoCloseable {

    /** The read ends of a process's standard output and error. */
    public record Readers(InputStream stdout, InputStream stderr) {

        /** Closes both: no one will read them. */
        public void close() {
            for (InputStream in : new InputStream[] {stdout, stderr}) {
                try {
                    in.close();
                } catch (IOException e) {
                    // closed all the same
                }
            }
        }
    }

    /** Read and write ends of standard output, then of standard error; -1 once closed. */
    private final int[] out = {-1, -1};

    private final int[] err = {-1, -1};

    private OutputPipes() {}

    /** A process started with its output into such pipes, and their read ends. */
    public record Started(Process process, Readers output) {}

    /** Starts {@code pb}'s process with its standard output and error into pipes of the server's. */
    public static Started start(ProcessBuilder pb) throws IOException {
        try (OutputPipes pipes = open()) {
            Process process = pipes.redirect(pb).start();
            try {
                return new Started(process, pipes.readers());
            } catch (IOException e) {
                process.destroyForcibly(); // with no one to read it, it would die of its first write anyway
                throw e;
            }
        }
    }

    /** Makes the two pipes (close-on-exec: no other process started meanwhile inherits them). */
    private static OutputPipes open() throws IOException {
        OutputPipes pipes = new OutputPipes();
        try {
            FileCalls.INSTANCE.pipe2(pipes.out, FileCalls.O_CLOEXEC);
            FileCalls.INSTANCE.pipe2(pipes.err, FileCalls.O_CLOEXEC);
        } catch (LastErrorException e) {
            pipes.close();
            throw new IOException("cannot make a pipe for a process's output (errno " + e.getErrorCode() + ")", e);
        }
        return pipes;
    }

    /**
     * Points {@code pb}'s standard output and error at the pipes: the JDK opens their write ends by name for the
     * child (a pipe opened through {@code /proc/self/fd} is the same pipe).
     */
    private ProcessBuilder redirect(ProcessBuilder pb) {
        return pb.redirectOutput(byName(out[1])).redirectError(byName(err[1]));
    }

    /**
     * Opens the read ends and closes this server's own descriptors of both pipes: call once the process has started,
     * so that end-of-file comes when it and whatever it left behind have closed the write ends.
     */
    private Readers readers() throws IOException {
        try {
            FileInputStream stdout = new FileInputStream(byName(out[0]));
            try {
                return new Readers(stdout, new FileInputStream(byName(err[0])));
            } catch (IOException e) {
                stdout.close();
                throw e;
            }
        } finally {
            close();
        }
    }

    /** Closes the descriptors still open (a process that did not start, say). */
    @Override
    public void close() {
        for (int[] pipe : new int[][] {out, err}) {
            for (int i = 0; i < 2; i++) {
                if (pipe[i] >= 0) {
                    try {
                        FileCalls.INSTANCE.close(pipe[i]);
                    } catch (LastErrorException e) {
                        // closed all the same
                    }
                    pipe[i] = -1;
                }
            }
        }
    }

    private static File byName(int fd) {
        return new File("/proc/self/fd/" + fd);
    }
}
