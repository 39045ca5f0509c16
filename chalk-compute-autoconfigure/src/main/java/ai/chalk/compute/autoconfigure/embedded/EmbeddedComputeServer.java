package ai.chalk.compute.autoconfigure.embedded;

import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.runtime.Isolation;
import ai.chalk.compute.server.store.SandboxState;
import ai.chalk.compute.server.threads.DaemonThreads;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.util.FileSystemUtils;

/**
 * The Chalk Compute server running inside the application, started and stopped with the
 * application context. It serves through gRPC's in-process transport; a TCP port (on
 * {@code 127.0.0.1}) opens only when {@code chalk.compute.embedded.port} asks for one. It registers
 * nothing in the application context besides itself: no data source, no gRPC services on the
 * application's own server.
 *
 * <p>Opening the store and probing the runtime take a few hundred milliseconds in a fresh JVM, so the
 * server begins starting on a background thread as soon as this bean is created, while the rest of the
 * context initializes; {@link #start()} (at the start of the lifecycle, before any
 * {@code CommandLineRunner}) waits for it, and a server that cannot start still fails the application's
 * startup.
 */
public class EmbeddedComputeServer implements SmartLifecycle, InitializingBean, DisposableBean {

    /** The lifecycle phase: early start and late stop, so other beans see a running server. */
    public static final int PHASE = Integer.MIN_VALUE + 1000;

    private static final Logger log = LoggerFactory.getLogger(EmbeddedComputeServer.class);

    private final Supplier<ComputeServer.Builder> settings;
    private final String inProcessName;
    private final Path dataDir;
    private final String description;
    private volatile Path temporaryDataDir;
    private CompletableFuture<ComputeServer> starting;
    private volatile ComputeServer server;

    /**
     * @param settings      the server's settings; the in-process name and data directory are set here
     * @param inProcessName the in-process name clients connect to
     * @param dataDir       where state is kept, or {@code null} for a temporary directory deleted at stop
     * @param description   the settings in words, for error messages (for example {@code runtime=auto})
     */
    public EmbeddedComputeServer(
            ComputeServer.Builder settings, String inProcessName, Path dataDir, String description) {
        this(supplied(settings), inProcessName, dataDir, description);
    }

    /**
     * @param settings      makes the server's settings, on the thread that starts the server (so that
     *                      loading the server's classes overlaps with the rest of the application's startup);
     *                      the in-process name and data directory are set here
     * @param inProcessName the in-process name clients connect to
     * @param dataDir       where state is kept, or {@code null} for a temporary directory deleted at stop
     * @param description   the settings in words, for error messages (for example {@code runtime=auto})
     */
    public EmbeddedComputeServer(
            Supplier<ComputeServer.Builder> settings, String inProcessName, Path dataDir, String description) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.inProcessName = Objects.requireNonNull(inProcessName, "inProcessName");
        this.dataDir = dataDir;
        this.description = description;
    }

    private static Supplier<ComputeServer.Builder> supplied(ComputeServer.Builder settings) {
        Objects.requireNonNull(settings, "settings");
        return () -> settings;
    }

    /** The in-process name of the server. */
    public String inProcessName() {
        return inProcessName;
    }

    /** The running server, or {@code null} when it is not running. */
    public ComputeServer server() {
        return server;
    }

    /** The TCP port the server listens on, if one was asked for and it is running. */
    public OptionalInt port() {
        ComputeServer s = server;
        return s == null ? OptionalInt.empty() : s.port();
    }

    /** The runtime's name ({@code local}, ...), or {@code null} when not running. */
    public String runtimeName() {
        ComputeServer s = server;
        return s == null ? null : s.runtimeName();
    }

    /** The isolation actually in force for sandboxes, or {@code null} when not running. */
    public Isolation isolation() {
        ComputeServer s = server;
        return s == null ? null : s.isolation();
    }

    /** How many sandboxes are in each state; empty when not running. */
    public Map<SandboxState, Long> sandboxCounts() {
        ComputeServer s = server;
        return s == null ? Map.of() : s.sandboxCounts();
    }

    /**
     * The server in words, for health details: in-process name, port, runtime, the isolation in force
     * and the number of sandboxes in each state.
     *
     * @return the details, in a stable order; only {@code running=false} when the server is not running
     */
    public Map<String, Object> details() {
        Map<String, Object> details = new LinkedHashMap<>();
        ComputeServer s = server;
        if (s == null) {
            details.put("running", false);
            return details;
        }
        details.put("inProcessName", inProcessName);
        s.port().ifPresent(p -> details.put("port", p));
        details.put("runtime", s.runtimeName());
        Isolation isolation = s.isolation();
        details.put("isolation", isolation.level());
        details.put("isolationDetail", isolation.detail());
        Map<String, Long> counts = new LinkedHashMap<>();
        s.sandboxCounts().forEach((state, count) -> counts.put(state.name(), count));
        details.put("sandboxes", counts);
        return details;
    }

    /** Begins starting the server in the background; {@link #start()} waits for it. */
    @Override
    public synchronized void afterPropertiesSet() {
        if (starting == null) {
            starting = new CompletableFuture<>();
            DaemonThreads.start("chalk-compute-embedded-start", this::startNow);
        }
    }

    private void startNow() {
        Path dir = dataDir;
        try {
            if (dir == null) {
                temporaryDataDir = Files.createTempDirectory("chalk-compute-embedded-");
                dir = temporaryDataDir;
            }
            starting.complete(settings.get()
                    .inProcessName(inProcessName)
                    .dataDir(dir)
                    .build()
                    .start());
        } catch (IOException | RuntimeException | Error e) {
            deleteTemporaryDataDir();
            starting.completeExceptionally(e);
        }
    }

    /**
     * Starts the server, or waits for the start begun when the bean was created: opens its store,
     * starts its runtime and begins serving.
     *
     * @throws EmbeddedServerStartException when it cannot run here (an unsupported runtime, isolation
     *                                      required but unavailable, an unusable data directory or port)
     */
    @Override
    public synchronized void start() {
        if (server != null) {
            return;
        }
        afterPropertiesSet();
        long waiting = System.nanoTime();
        try {
            server = starting.join();
            log.debug(
                    "Embedded Chalk Compute server ready; startup waited {} ms for it",
                    (System.nanoTime() - waiting) / 1_000_000);
        } catch (CompletionException e) {
            starting = null;
            throw new EmbeddedServerStartException(description, e.getCause());
        }
    }

    /** Stops serving, terminates the sandboxes still running and deletes a temporary data directory. */
    @Override
    public synchronized void stop() {
        ComputeServer s = server;
        if (s == null) {
            return;
        }
        server = null;
        starting = null;
        try {
            s.close();
        } finally {
            deleteTemporaryDataDir();
        }
    }

    /** Stops a server whose start began but whose lifecycle never started (the context failed first). */
    @Override
    public synchronized void destroy() {
        if (server == null && starting != null) {
            try {
                server = starting.join();
            } catch (CompletionException e) {
                starting = null;
                return;
            }
        }
        stop();
    }

    @Override
    public boolean isRunning() {
        return server != null;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    @Override
    public String toString() {
        return "EmbeddedComputeServer[in-process:" + inProcessName + ", " + description
                + (server != null ? ", running" : "") + "]";
    }

    private void deleteTemporaryDataDir() {
        if (temporaryDataDir != null) {
            try {
                FileSystemUtils.deleteRecursively(temporaryDataDir);
            } catch (IOException e) {
                // a leftover temporary directory is harmless
            }
            temporaryDataDir = null;
        }
    }
}
