package ai.chalk.compute.server.runtime;

import ai.chalk.compute.server.runtime.host.OutputPipes;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;

/**
 * A process running inside a sandbox. Its output streams must be read by the caller; an
 * unread stream blocks only this process (the pipe fills), never the server. A stream read to its end is given back;
 * one the caller stops reading before that must be closed ({@link #closeOutput}), or it holds a descriptor of the
 * server's until it is collected.
 */
public interface RuntimeProcess {

    /** The process id as seen inside the sandbox. */
    long pid();

    /** The process's standard input; closing it sends EOF. */
    OutputStream stdin();

    /** Standard output, or the terminal's output when running on a PTY. */
    InputStream stdout();

    /** Standard error; an empty stream when running on a PTY (the terminal merges both). */
    InputStream stderr();

    /** Closes both output streams: the caller reads no more of them (the process ended, or is being killed). */
    default void closeOutput() {
        new OutputPipes.Readers(stdout(), stderr()).close();
    }

    /** Whether the process runs on a PTY. */
    boolean pty();

    /** Delivers a signal (numbered as on Linux: 2 SIGINT, 9 SIGKILL, 15 SIGTERM ...) to the process. */
    void signal(int signal);

    /** Changes the terminal size; ignored without a PTY. */
    void resize(int cols, int rows);

    /**
     * Kills the process and every process it started (including ones that left its process
     * group or were re-parented), with SIGKILL. Returns once none is left.
     */
    void killTree();

    /** Completes when the process has exited; all output has been written to the streams by then. */
    CompletableFuture<ExitStatus> onExit();
}
