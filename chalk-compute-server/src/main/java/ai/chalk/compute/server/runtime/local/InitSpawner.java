package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * The threads that start a local runtime's sandbox inits (and their network helpers). An init dies with the thread
 * that spawned it (PR_SET_PDEATHSIG follows the parent <em>thread</em>), so it is spawned by a thread that lives
 * exactly as long as its runtime: a fixed pool's, whose threads never time out and never end with a task (a task's
 * failure stays in its future). A few of them, because a start holds its thread until the command has executed, and
 * creates at once should not queue behind each other's.
 */
final class InitSpawner implements AutoCloseable {

    /** Inits started at once, at most. */
    static final int THREADS = 4;

    private final ExecutorService thread =
            Executors.newFixedThreadPool(THREADS, DaemonThreads.numbered("chalk-local-spawner"));

    /** Starts {@code pb} from a spawner thread. */
    Process start(ProcessBuilder pb) throws IOException {
        try {
            return thread.submit(pb::start).get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IOException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting a sandbox", e);
        } catch (RejectedExecutionException e) {
            throw new IOException("the local runtime is shut down", e);
        }
    }

    /** Starts nothing more; the threads end once idle. */
    @Override
    public void close() {
        thread.shutdown();
    }
}
