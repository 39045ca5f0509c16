package ai.chalk.compute.autoconfigure.embedded;

import ai.chalk.compute.autoconfigure.SpringApplicationRun;
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
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.context.event.SmartApplicationListener;
import org.springframework.util.FileSystemUtils;

/**
 * The Chalk Compute server running inside the application, started and stopped with the
 * application context. It serves through gRPC's in-process transport; a TCP port (on
 * {@code 127.0.0.1}) opens only when {@code chalk.compute.embedded.port} asks for one. It registers
 * nothing in the application context besides itself: no data source, no gRPC services on the
 * application's own server.
 *
 * <p>Opening the store and probing the runtime take a few hundred milliseconds of processor time in a fresh JVM, so
 * the server starts on a background thread once the application is ready ({@code ApplicationReadyEvent}: after the
 * application's beans, web server and runners; in a context no {@code SpringApplication} runs, once it is refreshed),
 * or at the first call or health check if one comes first (an application whose runners work on), and the
 * application's startup does not wait for it: the first call to the server waits instead (through {@link #awaitServing()}, which the
 * auto-configured channel calls before it opens). A server that cannot start is logged as an error when it fails,
 * fails every call with the reason, and shows as down in health. Where the server must be there before the
 * application runs (a TCP port others connect to, isolation required, the Docker runtime asked for), the
 * auto-configuration makes {@link #start()} wait, and a server that cannot start fails the application's startup.
 */
public class EmbeddedComputeServer
        implements SmartLifecycle, InitializingBean, DisposableBean, BeanFactoryAware, SmartApplicationListener {

    /** The lifecycle phase: early start and late stop, so other beans see a running server. */
    public static final int PHASE = Integer.MIN_VALUE + 1000;

    private static final Logger log = LoggerFactory.getLogger(EmbeddedComputeServer.class);

    private final Supplier<ComputeServer.Builder> settings;
    private final String inProcessName;
    private final Path dataDir;
    private final String description;
    private volatile Path temporaryDataDir;
    private final boolean startupWaits;
    private CompletableFuture<ComputeServer> starting;
    private volatile ComputeServer server;
    private volatile boolean running;
    private boolean stopped;
    /** Whether a {@code SpringApplication} runs the context, so that the start waits until the application is ready. */
    private volatile boolean startWhenReady;

    /**
     * @param settings      the server's settings; the in-process name and data directory are set here
     * @param inProcessName the in-process name clients connect to
     * @param dataDir       where state is kept, or {@code null} for a temporary directory deleted at stop
     * @param description   the settings in words, for error messages (for example {@code runtime=auto})
     */
    public EmbeddedComputeServer(
            ComputeServer.Builder settings, String inProcessName, Path dataDir, String description) {
        this(supplied(settings), inProcessName, dataDir, description, true);
    }

    /**
     * @param settings      makes the server's settings, on the thread that starts the server (so that
     *                      loading the server's classes overlaps with the rest of the application's startup);
     *                      the in-process name and data directory are set here
     * @param inProcessName the in-process name clients connect to
     * @param dataDir       where state is kept, or {@code null} for a temporary directory deleted at stop
     * @param description   the settings in words, for error messages (for example {@code runtime=auto})
     * @param startupWaits  whether {@link #start()} waits until the server serves (and fails when it cannot start);
     *                      otherwise the first call waits
     */
    public EmbeddedComputeServer(
            Supplier<ComputeServer.Builder> settings,
            String inProcessName,
            Path dataDir,
            String description,
            boolean startupWaits) {
        this.startupWaits = startupWaits;
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

    /**
     * The running server, waiting for a start still in progress.
     *
     * @return the server, or {@code null} when it is not running or could not start
     */
    public ComputeServer server() {
        return isServing() ? server : null;
    }

    /**
     * Waits until the server serves: at once when it does, otherwise until its start ends (it is bounded: opening the
     * store and probing the runtime), beginning the start if it has not begun (a bean using the server while the
     * context is still being created).
     *
     * @return the server
     * @throws EmbeddedServerStartException when it could not start, with the reason
     * @throws IllegalStateException when it was stopped, or never started
     */
    public ComputeServer awaitServing() {
        ComputeServer s = server;
        if (s != null) {
            return s;
        }
        CompletableFuture<ComputeServer> pending;
        synchronized (this) {
            if (starting == null && !stopped) {
                begin();
            }
            pending = starting;
        }
        if (pending == null) {
            throw new IllegalStateException("the embedded Chalk Compute server (in-process:" + inProcessName
                    + ") is not running: it was stopped with the application, or never started");
        }
        try {
            s = pending.join();
        } catch (CompletionException e) {
            throw new EmbeddedServerStartException(description, e.getCause());
        }
        synchronized (this) {
            if (starting == pending && server == null) {
                server = s;
            }
        }
        return s;
    }

    /**
     * Whether the server serves, waiting for a start still in progress.
     *
     * @return {@code false} when it is not running or could not start
     */
    public boolean isServing() {
        if (server != null) {
            return true;
        }
        if (!running) {
            return false;
        }
        try {
            awaitServing();
            return true;
        } catch (EmbeddedServerStartException | IllegalStateException e) {
            return false;
        }
    }

    /** The TCP port the server listens on, if one was asked for and it is running. */
    public OptionalInt port() {
        ComputeServer s = server();
        return s == null ? OptionalInt.empty() : s.port();
    }

    /** The runtime's name ({@code local}, ...), or {@code null} when not running. */
    public String runtimeName() {
        ComputeServer s = server();
        return s == null ? null : s.runtimeName();
    }

    /** The isolation actually in force for sandboxes, or {@code null} when not running. */
    public Isolation isolation() {
        ComputeServer s = server();
        return s == null ? null : s.isolation();
    }

    /** How many sandboxes are in each state; empty when not running. */
    public Map<SandboxState, Long> sandboxCounts() {
        ComputeServer s = server();
        return s == null ? Map.of() : s.sandboxCounts();
    }

    /**
     * The server in words, for health details: in-process name, port, runtime, the isolation in force, the number
     * of sandboxes in each state and of those started ahead of time, waiting for creates.
     *
     * @return the details, in a stable order; {@code running=false} (and the reason it could not start, if it could
     *     not) when the server is not running
     */
    public Map<String, Object> details() {
        Map<String, Object> details = new LinkedHashMap<>();
        ComputeServer s;
        try {
            s = running ? awaitServing() : server;
        } catch (EmbeddedServerStartException | IllegalStateException e) {
            details.put("running", false);
            details.put("error", e.getMessage());
            return details;
        }
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
        details.put("pooledSandboxes", s.pooledSandboxes());
        return details;
    }

    /**
     * Begins starting the server in the background when the application's startup is to wait for it, so that the
     * start overlaps with the rest of the context's creation; otherwise the start begins once the application is
     * ready (or at the first call, if that comes first), so that it does not compete with the application's own
     * startup for the processor.
     */
    @Override
    public synchronized void afterPropertiesSet() {
        if (startupWaits) {
            begin();
        }
    }

    /** Learns whether a {@code SpringApplication} runs the context, and so will say when the application is ready. */
    @Override
    public void setBeanFactory(BeanFactory beanFactory) {
        startWhenReady = SpringApplicationRun.runs(beanFactory);
    }

    /**
     * Begins the start once the application is ready (after its beans, web server and runners), or once the context
     * is refreshed where no {@code SpringApplication} runs it (no such event comes).
     */
    @Override
    public boolean supportsEventType(Class<? extends ApplicationEvent> eventType) {
        return ApplicationReadyEvent.class.isAssignableFrom(eventType)
                || ContextRefreshedEvent.class.isAssignableFrom(eventType);
    }

    @Override
    public void onApplicationEvent(ApplicationEvent event) {
        boolean now =
                event instanceof ApplicationReadyEvent || (event instanceof ContextRefreshedEvent && !startWhenReady);
        if (now) {
            synchronized (this) {
                if (running && starting == null) {
                    begin();
                }
            }
        }
    }

    private synchronized void begin() {
        stopped = false;
        if (starting == null) {
            CompletableFuture<ComputeServer> pending = new CompletableFuture<>();
            starting = pending;
            DaemonThreads.start("chalk-compute-embedded-start", () -> startNow(pending));
        }
    }

    private void startNow(CompletableFuture<ComputeServer> pending) {
        Path dir = dataDir;
        try {
            if (dir == null) {
                temporaryDataDir = Files.createTempDirectory("chalk-compute-embedded-");
                dir = temporaryDataDir;
            }
            pending.complete(settings.get()
                    .inProcessName(inProcessName)
                    .dataDir(dir)
                    .build()
                    .start());
        } catch (IOException | RuntimeException | Error e) {
            deleteTemporaryDataDir();
            if (!startupWaits) {
                // nobody waits for this start: say it now, not only at the first call
                log.error(
                        "The embedded Chalk Compute server could not start; every call to it fails with this reason",
                        new EmbeddedServerStartException(description, e));
            }
            pending.completeExceptionally(e);
        }
    }

    /**
     * Starts the server's lifecycle. When the server was made to ({@code startupWaits}), waits for the start begun
     * when the bean was created (opening its store, starting its runtime, serving); otherwise the start begins once
     * the application is ready or at the first call, which waits for it, and a failure is logged when it happens.
     *
     * @throws EmbeddedServerStartException when it waits and the server cannot run here (an unsupported runtime,
     *                                      isolation required but unavailable, an unusable data directory or port)
     */
    @Override
    public void start() {
        synchronized (this) {
            if (running) {
                return;
            }
            stopped = false;
        }
        if (startupWaits) {
            long waiting = System.nanoTime();
            try {
                awaitServing();
            } catch (EmbeddedServerStartException e) {
                synchronized (this) {
                    starting = null;
                }
                throw e;
            }
            log.debug(
                    "Embedded Chalk Compute server ready; startup waited {} ms for it",
                    (System.nanoTime() - waiting) / 1_000_000);
        }
        running = true;
    }

    /** Stops serving, terminates the sandboxes still running and deletes a temporary data directory. */
    @Override
    public void stop() {
        CompletableFuture<ComputeServer> pending;
        synchronized (this) {
            running = false;
            stopped = true;
            pending = starting;
            starting = null;
        }
        ComputeServer s = server;
        if (s == null && pending != null) {
            // a start still going on finishes before it is undone
            try {
                s = pending.join();
            } catch (CompletionException e) {
                s = null;
            }
        }
        server = null;
        try {
            if (s != null) {
                s.close();
            }
        } finally {
            deleteTemporaryDataDir();
        }
    }

    /** Stops a server whose start began but whose lifecycle never started (the context failed first). */
    @Override
    public void destroy() {
        stop();
    }

    @Override
    public boolean isRunning() {
        return running || server != null;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    @Override
    public String toString() {
        return "EmbeddedComputeServer[in-process:" + inProcessName + ", " + description
                + (server != null ? ", running" : running ? ", starting" : "") + "]";
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
