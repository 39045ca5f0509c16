package ai.chalk.compute.function.worker;

import ai.chalk.compute.auth.ChalkCredentials;
import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.arrow.DecodeContext;
import ai.chalk.compute.sandbox.SandboxClient;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.vector.types.pojo.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The main class of a deployed function's replica. It reads its {@link WorkerSettings} from the environment,
 * serves {@code chalk.runtime.v1.RemoteCallService} and {@code grpc.health.v1.Health} on the Unix socket
 * {@code CHALK_WORKER_SOCKET} (health turns {@code SERVING} once the functions are loaded), and stops cleanly on
 * {@code SIGTERM}. What a call prints or logs to the console is tagged with its function's name ({@code FunctionOutput})
 * for the server, which keeps it as that function's logs. The server starts it; you do not run it yourself, except to try a worker locally:
 * <pre>
 * CHALK_WORKER_SOCKET=/tmp/w.sock CHALK_WORKER_FUNCTIONS=score=com.acme.Fraud#score \
 *     java -cp app.jar:chalk-compute-core.jar:... ai.chalk.compute.function.worker.FunctionWorker
 * </pre>
 */
public final class FunctionWorker implements AutoCloseable {

    /**
     * Not a static field: the class initialises before {@link #main} runs, and {@code main} sets the logging framework
     * up on a thread of its own (see there).
     */
    private static Logger log() {
        return LoggerFactory.getLogger(FunctionWorker.class);
    }

    private final WorkerSettings settings;
    // every thread named after its job, and none keeping a JVM alive (an embedding test's) once the worker is closed
    private final EventLoopGroup boss =
            new EpollEventLoopGroup(1, new DefaultThreadFactory("chalk-worker-accept", true));
    private final EventLoopGroup workers =
            new EpollEventLoopGroup(2, new DefaultThreadFactory("chalk-worker-io", true));
    /** Runs the functions; the transport's own threads only read, write and dispatch. */
    private final ExecutorService calls;

    private final HealthStatusManager health = new HealthStatusManager();
    private final FunctionHolder functions;
    private final Server server;
    private final SandboxClient serverClient; // null when the worker has no server to reach

    private FunctionWorker(WorkerSettings settings) {
        this.settings = settings;
        // with a limit, calls beyond it wait here: the server may have given up on one (timed out) that still runs
        ThreadFactory callThreads = new DefaultThreadFactory("chalk-function-call", true);
        this.calls = settings.maxConcurrent() > 0
                ? Executors.newFixedThreadPool(settings.maxConcurrent(), callThreads)
                : Executors.newCachedThreadPool(callThreads);
        this.functions = new FunctionHolder(calls);
        this.serverClient = settings.serverTarget()
                .map(target -> settings.identityTokenFile()
                        .map(file -> SandboxClient.builder()
                                .target(target)
                                .credentials(ChalkCredentials.ofTokenFile(file))
                                .build())
                        .orElseGet(() -> SandboxClient.connect(target)))
                .orElse(null);
        this.server = NettyServerBuilder.forAddress(
                        new DomainSocketAddress(settings.socket().toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                // gRPC asks every accepted channel for TCP keep-alive, which a unix socket has not: Netty would warn
                // about it for each connection
                .withChildOption(ChannelOption.SO_KEEPALIVE, null)
                .bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers)
                .maxInboundMessageSize(256 << 20)
                // handlers never block (CallFunctionService hands the functions to `calls`): running them on the
                // transport's thread spares a thread hand-off per event of every call
                .directExecutor()
                .addService(functions.service(
                        serverClient == null ? DecodeContext.empty() : DecodeContext.of(serverClient)))
                .addService(health.getHealthService())
                .build();
    }

    /**
     * Runs a worker until {@code SIGTERM}; exits with status 1 when its settings are wrong or its functions
     * cannot be loaded, printing why.
     *
     * @param args ignored; everything comes from the environment
     */
    public static void main(String[] args) {
        long mainEntered = System.nanoTime();
        long mainEnteredMillis = System.currentTimeMillis();
        FunctionOutput.install(); // before anything (a logging framework) takes hold of System.out
        startLoggingAlongsideArrow();
        long loggingReady = System.nanoTime();
        int status;
        try (FunctionWorker worker = start(WorkerSettings.fromEnv(System.getenv()))) {
            log().info(
                            "worker {} started: main entered {} ms after the server ran it, logging and Arrow took {} ms,"
                                    + " socket and functions {} ms",
                            worker.settings.workerId(),
                            execToMainMillis(mainEnteredMillis),
                            (loggingReady - mainEntered) / 1_000_000,
                            (System.nanoTime() - loggingReady) / 1_000_000);
            Thread current = Thread.currentThread();
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> current.interrupt());
            status = worker.awaitUntilInterrupted();
        } catch (Exception e) {
            System.err.println("chalk function worker failed to start: " + e);
            log().error("worker failed to start", e);
            status = 1;
        }
        System.exit(status);
    }

    /**
     * How long it took from the server's exec of the worker ({@code CHALK_WORKER_EXEC_MILLIS}, its clock: the same
     * machine's) to {@code main}: the sandbox's own start-up and the JVM's. A replica's start is logged in phases; the
     * process's own start time is no substitute ({@code /proc} gives the boot time to the second only). -1 when the
     * worker was started by hand.
     */
    private static long execToMainMillis(long mainEnteredMillis) {
        String exec = System.getenv("CHALK_WORKER_EXEC_MILLIS");
        try {
            return exec == null ? -1 : mainEnteredMillis - Long.parseLong(exec);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Sets up the logging framework and Arrow's schema classes side by side. Reading the logging configuration
     * (logback's: an XML parser and some 500 classes, more when the class path has several configurations, as a test
     * class path does) and initialising Arrow's {@link Schema} (a Jackson {@code ObjectMapper}: some 600 classes, needed
     * to load the functions and by every call) each took about a third of a worker's start; neither needs the other.
     * The logging framework goes first on a thread of its own, so that no logger is asked for before it is ready (a
     * logger asked for meanwhile is a substitute whose events are replayed later, with a warning); nothing of Arrow
     * logs while its schema class initialises. Logback without a configuration logs at INFO, not DEBUG
     * ({@link UnconfiguredLogback}).
     */
    private static void startLoggingAlongsideArrow() {
        Thread logging = new Thread(
                () -> UnconfiguredLogback.quietDefaults(FunctionWorker.class.getClassLoader()), "chalk-worker-logging");
        logging.setDaemon(true);
        logging.start();
        new Schema(List.of()); // the schema class's initialisation is the point, not the instance
        try {
            logging.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the worker starts all the same; SIGTERM is handled later
        }
    }

    /**
     * Starts a worker: binds the socket (replacing a stale socket file), reports {@code NOT_SERVING}, loads the
     * functions, then reports {@code SERVING}.
     *
     * @param settings what to serve and where
     * @return the running worker
     * @throws Exception when the socket cannot be bound or the functions cannot be loaded; nothing is left running
     */
    public static FunctionWorker start(WorkerSettings settings) throws Exception {
        Files.deleteIfExists(settings.socket());
        FunctionWorker worker = new FunctionWorker(settings);
        try {
            worker.health.setStatus("", ServingStatus.NOT_SERVING);
            worker.server.start();
            worker.functions.set(loaderFor(settings.mode(), worker.serverClient).load(settings));
            worker.health.setStatus("", ServingStatus.SERVING);
            log().info("worker {} serves {} on {}", settings.workerId(), settings.functions(), settings.socket());
            return worker;
        } catch (Exception | Error e) {
            worker.close();
            throw e;
        }
    }

    /**
     * The loader of a mode: {@code plain}, or one found with {@link ServiceLoader}.
     *
     * @param mode the mode, as in {@code CHALK_WORKER}
     * @return the loader
     * @throws IllegalStateException when no loader supports the mode
     */
    static WorkerFunctions loaderFor(String mode, SandboxClient serverClient) {
        PlainWorkerFunctions plain = new PlainWorkerFunctions(serverClient);
        if (plain.supports(mode)) {
            return plain;
        }
        for (WorkerFunctions candidate : ServiceLoader.load(WorkerFunctions.class)) {
            if (candidate.supports(mode)) {
                return candidate;
            }
        }
        if (mode.startsWith("spring:")) {
            throw new IllegalStateException(
                    "CHALK_WORKER=" + mode + " needs the Chalk Compute Spring Boot starter on the"
                            + " class path (it boots the application in worker mode); no WorkerFunctions implementation"
                            + " for spring: was found");
        }
        throw new IllegalStateException(
                "CHALK_WORKER=" + mode + " is not a worker mode: use plain or" + " spring:fully.qualified.MainClass");
    }

    /** What it serves and where. */
    public WorkerSettings settings() {
        return settings;
    }

    /** The functions it loaded. */
    public FunctionRegistry registry() {
        return functions.registry();
    }

    private int awaitUntilInterrupted() {
        try {
            server.awaitTermination();
            return 0;
        } catch (InterruptedException e) {
            log().info("worker {} stopping", settings.workerId());
            return 0;
        }
    }

    /** Stops serving: calls in flight get a few seconds to finish; the socket file is removed. */
    @Override
    public void close() {
        health.enterTerminalState();
        server.shutdown();
        try {
            if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
                server.shutdownNow();
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
        for (EventLoopGroup group : List.of(boss, workers)) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        calls.shutdownNow();
        try {
            Files.deleteIfExists(settings.socket());
        } catch (IOException e) {
            log().debug("cannot remove {}", settings.socket(), e);
        }
        if (serverClient != null) {
            serverClient.close();
        }
    }

    /** The registry, set once loaded; calls arriving before then are refused as unavailable. */
    private static final class FunctionHolder {
        private final Executor executor;
        private volatile FunctionRegistry registry;

        FunctionHolder(Executor executor) {
            this.executor = executor;
        }

        void set(FunctionRegistry loaded) {
            registry = loaded;
        }

        FunctionRegistry registry() {
            FunctionRegistry current = registry;
            if (current == null) {
                throw io.grpc.Status.UNAVAILABLE
                        .withDescription("the worker is still loading its functions")
                        .asRuntimeException();
            }
            return current;
        }

        io.grpc.BindableService service(DecodeContext context) {
            return new CallFunctionService(this::registry, context, executor);
        }
    }
}
