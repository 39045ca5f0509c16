package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * The thread that starts a local runtime's sandbox inits (and their network helpers). An init dies with the thread
 * that spawned it (PR_SET_PDEATHSIG follows the parent <em>thread</em>), so it is spawned by a thread that lives
 * exactly as long as its runtime.
 */
final class InitSpawner implements AutoCloseable {

    private final ExecutorService thread =
            Executors.newSingleThreadExecutor(DaemonThreads.named("chalk-local-spawner"));

    /** Starts {@code pb} from the spawner thread. */
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

    /** Starts nothing more; the thread ends once idle. */
    @Override
    public void close() {
        thread.shutdown();
    }
}
