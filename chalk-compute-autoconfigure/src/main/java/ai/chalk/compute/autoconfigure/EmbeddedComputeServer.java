package ai.chalk.compute.autoconfigure;

import ai.chalk.compute.server.ComputeServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.springframework.context.SmartLifecycle;
import org.springframework.util.FileSystemUtils;

/**
 * The Chalk Compute server running inside the application, started and stopped with the
 * application context. It serves in-process; a TCP port opens only when asked for.
 */
public class EmbeddedComputeServer implements SmartLifecycle {

    private final ComputeServer.Builder settings;
    private final String inProcessName;
    private final Path temporaryDataDir;
    private ComputeServer server;

    /**
     * @param settings          the server's settings
     * @param inProcessName     the in-process name clients connect to
     * @param temporaryDataDir  a data directory to delete on stop, or null when the user chose one
     */
    public EmbeddedComputeServer(ComputeServer.Builder settings, String inProcessName, Path temporaryDataDir) {
        this.settings = settings.inProcessName(inProcessName);
        this.inProcessName = inProcessName;
        this.temporaryDataDir = temporaryDataDir;
    }

    /** The in-process name of the server. */
    public String inProcessName() {
        return inProcessName;
    }

    /** The running server, or null before start. */
    public ComputeServer server() {
        return server;
    }

    @Override
    public synchronized void start() {
        if (server != null) {
            return;
        }
        try {
            server = settings.build().start();
        } catch (IOException e) {
            throw new UncheckedIOException("the embedded Chalk Compute server could not start: " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void stop() {
        if (server == null) {
            return;
        }
        server.close();
        server = null;
        if (temporaryDataDir != null) {
            try {
                FileSystemUtils.deleteRecursively(temporaryDataDir);
            } catch (IOException e) {
                // a leftover temporary directory is harmless
            }
        }
    }

    @Override
    public boolean isRunning() {
        return server != null;
    }

    /** Start early and stop late, so beans using the client see a running server. */
    @Override
    public int getPhase() {
        return Integer.MIN_VALUE + 1000;
    }

    static Path createTemporaryDataDir() {
        try {
            return Files.createTempDirectory("chalk-compute-embedded-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
