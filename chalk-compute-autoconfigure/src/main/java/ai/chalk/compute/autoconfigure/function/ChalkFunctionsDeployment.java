package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.autoconfigure.SpringApplicationRun;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.function.deploy.WorkerMode;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressGroup;
import ai.chalk.compute.scaling.Readiness;
import ai.chalk.compute.scaling.ReadinessSteps;
import io.grpc.Status;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.event.ApplicationStartedEvent;
import org.springframework.boot.context.event.SpringApplicationEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.CustomizableThreadFactory;

/**
 * Deploys the application's functions in the background once the application is ready: one code snapshot of the
 * class path for all of them, then each function's ensure request through {@link FunctionDeployer} (which uploads
 * only the blobs the server lacks), several at once. Each function is a group on the progress display, and its
 * state in {@link ChalkFunctions} moves from {@code DEPLOYING} to {@code DEPLOYED} or {@code FAILED}.
 *
 * <p>Once deployed, the group goes on with the readiness steps a plain-Java {@code awaitReady} shows
 * ({@link ReadinessSteps}), until the function's replicas serve, cannot start, or {@code wait-timeout} passes:
 * <pre>
 * Function "score"
 *   │ › Deploying
 *   │ ✓ Deployed version 3
 *   │ › Waiting for readiness
 *   │ › Waiting for replicas 0/1
 *   └ ✓ Ready (1/1 replicas)
 * </pre>
 * That watch polls on the deployment's scheduler without holding a thread between polls, and is not part of the
 * deployment: the function is {@code DEPLOYED} (and {@link #awaitDeployments} returns) as soon as the server holds
 * its version; health shows its replicas from then on.
 *
 * <p>A deployment that could not reach the server ({@code UNAVAILABLE}, {@code DEADLINE_EXCEEDED},
 * {@code RESOURCE_EXHAUSTED}, {@code ABORTED}: the application started before its server, or the server restarts) is
 * {@code RETRYING}: it is tried again after a backoff that doubles up to a maximum ({@link RetryBackoff}), for as long
 * as the application runs, so that a function deploys, and its health goes UP, as soon as the server is there. A
 * deployment the server refused is {@code FAILED} and not retried. {@link #redeploy(Optional)} tries again at once.
 *
 * <p>Startup is not held back unless {@code chalk.compute.functions.wait-on-startup=true}. Nor does the deployment share
 * the processor with it: under a {@code SpringApplication} it begins once the application is ready
 * ({@link ApplicationReadyEvent}: the web server started, the runners returned), since snapshotting and hashing the
 * class path beside the startup thread slowed the startup of a web application on two cores by a few hundred
 * milliseconds (and beginning it before the runners, by a few dozen still). An application whose runners do not return
 * soon (a batch job, a command loop) gets its functions deployed anyway: the deployment begins at the latest
 * {@link #RUNNERS_GRACE} after {@link ApplicationStartedEvent}. Whatever waits for a deployment before then ({@link #awaitDeployments}, {@link ChalkFunctions#awaitDeployment},
 * {@link #redeploy}) begins it at once. In a context no {@code SpringApplication} runs, it begins when the context
 * starts. A failure is logged at
 * ERROR with the server's message and the method's location as a stack frame reads, without the SDK's frames.
 * Workers boot the application itself ({@code spring:} and its {@code @SpringBootApplication} class), so each
 * function runs on its bean there.
 */
public class ChalkFunctionsDeployment
        implements SmartLifecycle, BeanFactoryAware, ApplicationListener<SpringApplicationEvent> {

    private static final Logger log = LoggerFactory.getLogger(ChalkFunctionsDeployment.class);

    /**
     * How long after {@link ApplicationStartedEvent} the deployment begins at the latest when the application is not
     * ready by then: long past the runners of an application that starts and serves, short beside those of one whose
     * runners work for minutes and would otherwise hold its functions back that long.
     */
    public static final Duration RUNNERS_GRACE = Duration.ofSeconds(2);

    /** The first pause between two readiness polls, doubling up to {@link #MAX_READINESS_POLL}, as a plain wait's. */
    private static final Duration FIRST_READINESS_POLL = Duration.ofMillis(100);

    private static final Duration MAX_READINESS_POLL = Duration.ofSeconds(1);

    /** How long one readiness poll may take before it counts as the server not answering. */
    private static final Duration READINESS_CALL = Duration.ofSeconds(10);

    /** The failures of a call that did not reach a server able to answer: worth trying again later. */
    private static final Set<Status.Code> RETRYABLE = Set.of(
            Status.Code.UNAVAILABLE,
            Status.Code.DEADLINE_EXCEEDED,
            Status.Code.RESOURCE_EXHAUSTED,
            Status.Code.ABORTED);

    private final ChalkFunctions functions;
    private final FunctionDeployer deployer;
    private final Supplier<CodeSnapshot> code;
    private final Supplier<Optional<Class<?>>> mainClass;
    private final ProgressDisplay progress;
    private final boolean waitOnStartup;
    private final Duration waitTimeout;
    private final int concurrency;
    private final @Nullable RetryBackoff retry;
    private final Runnable reconnect;
    private final Clock clock;

    // guarded by this
    private ScheduledExecutorService executor;
    private final Map<String, Run> running = new LinkedHashMap<>();
    private final Map<String, ReadinessWatch> watching = new HashMap<>();
    private CompletableFuture<Void> idle = CompletableFuture.completedFuture(null);
    private Optional<Class<?>> application;
    private boolean started;
    /** Whether the deployment waits for {@link ApplicationReadyEvent} (a {@code SpringApplication} runs it). */
    private boolean deferUntilReady;
    /** Started, but the functions not yet scheduled: waiting for the application to be ready. */
    private boolean deferred;
    /** Whether a deployment has succeeded since start: the server has the code, so others need not wait their turn. */
    private volatile boolean codeOnServer;

    private final Object firstUpload = new Object();
    private final Object snapshotLock = new Object();
    private CodeSnapshot snapshot; // guarded by snapshotLock

    /**
     * @param functions     the functions to deploy (those discovered)
     * @param deployer      sends the ensure requests and uploads
     * @param code          makes the code snapshot, once per start
     * @param mainClass     finds the application class workers boot, if there is one
     * @param progress      where each function's deployment is shown
     * @param waitOnStartup whether {@link #start()} waits for every deployment to finish
     * @param waitTimeout   how long it waits at most
     * @param concurrency   how many functions deploy at once
     * @param retry         how a deployment that could not reach the server is retried; {@code null} for never
     * @param reconnect     run before each retry: makes the channel connect at once, not after gRPC's own backoff
     *                      ({@link ai.chalk.compute.autoconfigure.ChalkComputeChannel#reconnectNow()})
     */
    public ChalkFunctionsDeployment(
            ChalkFunctions functions,
            FunctionDeployer deployer,
            Supplier<CodeSnapshot> code,
            Supplier<Optional<Class<?>>> mainClass,
            ProgressDisplay progress,
            boolean waitOnStartup,
            Duration waitTimeout,
            int concurrency,
            @Nullable RetryBackoff retry,
            Runnable reconnect) {
        this(
                functions,
                deployer,
                code,
                mainClass,
                progress,
                waitOnStartup,
                waitTimeout,
                concurrency,
                retry,
                reconnect,
                Clock.systemUTC());
    }

    ChalkFunctionsDeployment(
            ChalkFunctions functions,
            FunctionDeployer deployer,
            Supplier<CodeSnapshot> code,
            Supplier<Optional<Class<?>>> mainClass,
            ProgressDisplay progress,
            boolean waitOnStartup,
            Duration waitTimeout,
            int concurrency,
            @Nullable RetryBackoff retry,
            Runnable reconnect,
            Clock clock) {
        this.functions = Objects.requireNonNull(functions, "functions");
        this.deployer = Objects.requireNonNull(deployer, "deployer");
        this.code = Objects.requireNonNull(code, "code");
        this.mainClass = Objects.requireNonNull(mainClass, "mainClass");
        this.progress = Objects.requireNonNull(progress, "progress");
        this.waitOnStartup = waitOnStartup;
        this.waitTimeout = Objects.requireNonNull(waitTimeout, "waitTimeout");
        if (concurrency < 1) {
            throw new IllegalArgumentException("concurrency must be at least 1, got " + concurrency);
        }
        this.concurrency = concurrency;
        this.retry = retry;
        this.reconnect = Objects.requireNonNull(reconnect, "reconnect");
        this.clock = Objects.requireNonNull(clock, "clock");
        functions.onDeploymentWanted(this::beginDeferred);
    }

    /** Learns whether a {@code SpringApplication} runs the context, so that the deployment waits until it is ready. */
    @Override
    public synchronized void setBeanFactory(BeanFactory beanFactory) {
        deferUntilReady = SpringApplicationRun.runs(beanFactory);
    }

    @Override
    public void start() {
        synchronized (this) {
            if (started) {
                return;
            }
            started = true;
            CustomizableThreadFactory threads = new CustomizableThreadFactory("chalk-functions-deploy-");
            threads.setDaemon(true); // a deployment never keeps the JVM alive on its own
            ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(concurrency, threads);
            pool.setRemoveOnCancelPolicy(true);
            executor = pool;
            // not done until the functions are scheduled, so that awaitDeployments waits for them
            idle = new CompletableFuture<>();
            if (deferUntilReady && !waitOnStartup) {
                deferred = true; // begun by ApplicationReadyEvent, or by whatever waits for a deployment first
            } else {
                // the functions' signatures are still being read in the background: the startup thread does not wait
                pool.execute(() -> scheduleDiscovered(pool));
            }
        }
        if (waitOnStartup) {
            awaitDeployments(waitTimeout);
        }
    }

    /**
     * The application is ready: the deployment begins, unless something that waited for it began it already. The
     * application has started (its runners are about to run): the deployment begins {@link #RUNNERS_GRACE} later at
     * the latest.
     */
    @Override
    public void onApplicationEvent(SpringApplicationEvent event) {
        if (event instanceof ApplicationReadyEvent) {
            beginDeferred();
        } else if (event instanceof ApplicationStartedEvent) {
            synchronized (this) {
                if (deferred && started && executor != null) {
                    executor.schedule(this::beginDeferred, RUNNERS_GRACE.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
        }
    }

    /** Begins a deployment deferred until the application is ready; nothing when it has begun or is not started. */
    private synchronized void beginDeferred() {
        if (deferred && started && executor != null) {
            deferred = false;
            ScheduledExecutorService pool = executor;
            pool.execute(() -> scheduleDiscovered(pool));
        }
    }

    /** Schedules the deployment of every function discovered, once their signatures are read. */
    private void scheduleDiscovered(ScheduledExecutorService pool) {
        List<FunctionDefinition> definitions;
        try {
            definitions = functions.registry().definitions();
        } catch (IllegalStateException e) {
            definitions = List.of(); // the reading failed, and said so: nothing to deploy
        }
        synchronized (this) {
            if (!started || executor != pool) {
                return; // stopped meanwhile
            }
            for (FunctionDefinition function : definitions) {
                boolean discovered = functions
                        .function(function.name())
                        .map(s -> s.status() == FunctionDeploymentState.Status.DISCOVERED)
                        .orElse(false);
                if (discovered) {
                    schedule(function, 1, Duration.ZERO, null);
                }
            }
            if (running.isEmpty()) {
                idle.complete(null);
            }
        }
    }

    /**
     * Deploys again now: the functions given (every registered one when empty), whatever their state, except those
     * whose deployment is under way. A function waiting to retry is tried at once. An unchanged function gets its
     * current version back (reused), so this is safe to call at any time.
     *
     * @param name one function's name, or empty for all
     * @return what was started, and why the others were not; empty when there is no function of that name
     */
    public Optional<Redeploy> redeploy(Optional<String> name) {
        List<FunctionDeploymentState> targets = name.isPresent()
                ? functions.function(name.get()).map(List::of).orElse(List.of())
                : functions.functions();
        if (name.isPresent() && targets.isEmpty()) {
            return Optional.empty();
        }
        beginDeferred();
        List<String> started = new ArrayList<>();
        Map<String, String> notStarted = new LinkedHashMap<>();
        synchronized (this) {
            for (FunctionDeploymentState state : targets) {
                Optional<FunctionDefinition> function =
                        functions.registry().find(state.name()).map(f -> f.definition());
                Run run = running.get(state.name());
                if (!this.started || executor == null) {
                    notStarted.put(state.name(), "the deployment is not running (the application is stopping)");
                } else if (function.isEmpty()) {
                    notStarted.put(state.name(), "it cannot be deployed: " + state.error());
                } else if (run != null && run.deploying) {
                    notStarted.put(state.name(), "its deployment is under way");
                } else {
                    if (run != null) {
                        run.next.cancel(false); // a retry waiting: now instead
                    }
                    schedule(function.get(), run != null ? run.attempt + 1 : 1, Duration.ZERO, run);
                    started.add(state.name());
                }
            }
        }
        if (!started.isEmpty()) {
            log.info("Chalk functions redeploying: {}", started);
        }
        return Optional.of(new Redeploy(started, notStarted));
    }

    /**
     * What {@link #redeploy(Optional)} did.
     *
     * @param started    the functions whose deployment started
     * @param notStarted the others, each with why
     */
    public record Redeploy(List<String> started, Map<String, String> notStarted) {

        /** Copies the collections. */
        public Redeploy {
            started = List.copyOf(started);
            notStarted = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(notStarted));
        }
    }

    /** Schedules a try of a function's deployment. The caller holds the lock. */
    private void schedule(FunctionDefinition function, int attempt, Duration delay, @Nullable Run previous) {
        endWatch(function.name(), "redeploying");
        Run run = new Run(function, attempt, previous != null && !previous.group.isFinished() ? previous.group : null);
        if (run.group == null) {
            run.group = progress.open("Function \"" + function.name() + "\"");
        }
        if (running.isEmpty() && idle.isDone()) {
            idle = new CompletableFuture<>();
        }
        running.put(function.name(), run);
        if (delay.isZero()) {
            markDeploying(run);
        }
        run.next = executor.schedule(() -> attempt(run), delay.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void markDeploying(Run run) {
        run.deploying = true;
        functions.update(run.function.name(), s -> s.deploying(run.attempt));
        if (run.attempt == 1) {
            run.group.step("Deploying"); // a retry stays on its "Waiting for the server" line: one line per outage
        }
    }

    private void attempt(Run run) {
        synchronized (this) {
            if (running.get(run.function.name()) != run) {
                return; // replaced by a redeploy, or stopped
            }
            if (!run.deploying) {
                markDeploying(run);
            }
        }
        FunctionDeployer.Deployment result = null;
        Throwable failure = null;
        try {
            if (run.attempt > 1) {
                reconnect.run(); // the server may be back: do not let gRPC's reconnect backoff fail this try
            }
            result = codeOnServer ? deploy(run.function) : deployFirst(run.function);
        } catch (RuntimeException | Error e) {
            failure = e;
        }
        finish(run, result, failure);
    }

    /**
     * Until the server has the code, one deployment at a time: the first uploads the blobs the server lacks, the
     * others find them there (started together, each would upload the whole class path).
     */
    private FunctionDeployer.Deployment deployFirst(FunctionDefinition function) {
        synchronized (firstUpload) {
            return deploy(function);
        }
    }

    private FunctionDeployer.Deployment deploy(FunctionDefinition function) {
        Class<?> main = application()
                .orElseThrow(() -> new IllegalStateException("the context has no @SpringBootApplication (or"
                        + " @SpringBootConfiguration) class for workers to boot the application from"));
        // the functions of one bean (and a @ChalkClass's methods) share replicas: each deployment serves all of them
        List<FunctionDefinition> served = DeploymentUnits.servedWith(function, functions);
        FunctionDeployer.Deployment deployment =
                deployer.ensure(function, served, snapshot(), WorkerMode.spring(main), false);
        codeOnServer = true;
        return deployment;
    }

    private synchronized Optional<Class<?>> application() {
        if (application == null) {
            application = mainClass.get();
        }
        return application;
    }

    /** One snapshot of the class path for every deployment under way; made when first needed. */
    private CodeSnapshot snapshot() {
        synchronized (snapshotLock) { // not the deployment's lock: hashing the class path takes a while
            if (snapshot == null) {
                snapshot = code.get();
            }
            return snapshot;
        }
    }

    private void finish(Run run, FunctionDeployer.@Nullable Deployment result, @Nullable Throwable failure) {
        String name = run.function.name();
        synchronized (this) {
            if (running.get(name) != run) {
                return; // stopped while deploying: the application is shutting down, which is no failure
            }
            run.deploying = false;
            if (result != null) {
                int version = result.version().version();
                functions.update(name, s -> s.deployed(version, result.reused()));
                String deployed = (result.reused() ? "Reused version " : "Deployed version ") + version;
                run.group.completed(deployed);
                watchReadiness(run, deployed);
                log.debug("Chalk function {} {}: version {}", name, result.reused() ? "reused" : "deployed", version);
                if (run.attempt > 1) {
                    log.info("Chalk function {} deployed after {} tries", name, run.attempt);
                }
                done(name);
                return;
            }
            String message = messageOf(failure);
            if (retry != null && retryable(failure) && executor != null) {
                Duration delay = retry.delay(run.attempt);
                Instant next = clock.instant().plus(delay);
                functions.update(name, s -> s.retrying(message, next));
                // the same line on every try: printed once, however long the server takes
                run.group.step("Waiting for the server: " + message);
                if (run.attempt == 1) {
                    log.warn(
                            "Chalk function {} could not be deployed, retrying with backoff up to {}: {}",
                            name,
                            retry.max(),
                            message);
                } else {
                    log.debug("Chalk function {}: try {} failed, next in {}: {}", name, run.attempt, delay, message);
                }
                schedule(run.function, run.attempt + 1, delay, run);
                return;
            }
            functions.update(name, s -> s.with(FunctionDeploymentState.Status.FAILED, null, message));
            run.group.fail(message);
            done(name);
        }
        // the user's method is where to look; the SDK's frames would only hide it
        log.error(
                "Chalk function {} failed to deploy: {}\n\tat {}",
                name,
                message(failure),
                SourceLocation.of(run.function.method()));
    }

    /** Goes on with the readiness steps in the function's group. The caller holds the lock. */
    private void watchReadiness(Run run, String deployed) {
        int wanted = run.function.deployment().minReplicas().orElse(0);
        ReadinessWatch watch = new ReadinessWatch(
                run.function.name(),
                run.group,
                new ReadinessSteps(run.group, wanted),
                deployed,
                System.nanoTime() + waitTimeout.toNanos());
        watch.steps.begin();
        watching.put(watch.name, watch);
        watch.next = executor.schedule(() -> poll(watch), 0, TimeUnit.MILLISECONDS);
    }

    /** One readiness poll: shows the answer, then schedules the next unless the wait ended. */
    private void poll(ReadinessWatch watch) {
        synchronized (this) {
            if (watching.get(watch.name) != watch) {
                return; // redeployed or stopped meanwhile
            }
        }
        Readiness readiness = null;
        RuntimeException failure = null;
        try {
            readiness = deployer.readiness(watch.name, READINESS_CALL);
        } catch (RuntimeException e) {
            failure = e;
        }
        synchronized (this) {
            if (watching.get(watch.name) != watch || executor == null) {
                return;
            }
            if (failure != null && !retryable(failure)) {
                // deleted from elsewhere, or refused: there is nothing more to watch; health says the same
                watching.remove(watch.name);
                watch.group.fail("Readiness unknown: " + messageOf(failure));
                return;
            }
            if (readiness != null && watch.steps.show(readiness)) {
                watching.remove(watch.name);
                return;
            }
            if (System.nanoTime() - watch.deadline >= 0) {
                watching.remove(watch.name);
                watch.steps.timedOut(waitTimeout);
                return;
            }
            // a poll the server did not answer is one more try later: it may be restarting
            Duration pause = watch.pause;
            watch.pause = pause.multipliedBy(2).compareTo(MAX_READINESS_POLL) > 0
                    ? MAX_READINESS_POLL
                    : pause.multipliedBy(2);
            watch.next = executor.schedule(() -> poll(watch), pause.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /**
     * Stops watching a function's readiness, closing its group on what was done (the deployment succeeded; only the
     * watch ends). The caller holds the lock.
     */
    private void endWatch(String name, String why) {
        ReadinessWatch watch = watching.remove(name);
        if (watch != null) {
            watch.next.cancel(false);
            watch.group.succeed(watch.deployed + " (readiness not followed further: " + why + ")");
        }
    }

    private static String message(@Nullable Throwable failure) {
        return failure == null ? "" : messageOf(failure);
    }

    /** A function's deployment ended. The caller holds the lock. */
    private void done(String name) {
        running.remove(name);
        if (running.isEmpty()) {
            closeSnapshot();
            idle.complete(null);
        }
    }

    private void closeSnapshot() {
        synchronized (snapshotLock) {
            if (snapshot != null) {
                snapshot.close();
                snapshot = null;
            }
        }
    }

    static boolean retryable(@Nullable Throwable failure) {
        Throwable cause = unwrap(failure);
        return cause instanceof ChalkComputeException chalk && RETRYABLE.contains(chalk.statusCode());
    }

    private static @Nullable Throwable unwrap(@Nullable Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    /** The server's message, without a wrapper's. */
    static String messageOf(Throwable failure) {
        Throwable cause = Objects.requireNonNull(unwrap(failure));
        if (cause instanceof ChalkComputeException chalk) {
            return chalk.statusCode() + ": " + chalk.serverMessage();
        }
        return cause.getMessage() != null ? cause.getMessage() : cause.toString();
    }

    /**
     * Waits until every function is deployed or failed; a function that is retrying has not finished.
     *
     * @param timeout how long to wait at most
     * @return {@code true} when all finished in time
     */
    public boolean awaitDeployments(Duration timeout) {
        beginDeferred();
        CompletableFuture<Void> current;
        synchronized (this) {
            if (!started) {
                return false;
            }
            current = idle;
        }
        try {
            current.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            log.warn(
                    "Chalk functions still deploying after {}; the application goes on, they finish in the background",
                    timeout);
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException e) {
            return true; // failures are recorded per function
        }
    }

    @Override
    public void stop() {
        ScheduledExecutorService pool;
        synchronized (this) {
            pool = executor;
            executor = null; // first, so deployments cut short here are not reported as failures
            started = false;
            deferred = false;
            for (String name : List.copyOf(watching.keySet())) {
                endWatch(name, "the application is stopping");
            }
            for (Run run : running.values()) {
                run.next.cancel(false);
                functions.update(
                        run.function.name(), s -> s.with(FunctionDeploymentState.Status.DISCOVERED, null, null));
                run.group.close();
            }
            running.clear();
            idle.complete(null);
        }
        if (pool != null) {
            pool.shutdownNow();
            try {
                pool.awaitTermination(5, TimeUnit.SECONDS); // a deployment cut short lets go of the snapshot
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        closeSnapshot();
    }

    @Override
    public synchronized boolean isRunning() {
        return started;
    }

    /**
     * Last: after the embedded server (which starts early), so the deployment has a server to talk to, and after the
     * web server, so that hashing the class path in the background does not compete with the application's own
     * startup on a small machine (where no {@link ApplicationReadyEvent} defers it further); stopped first.
     */
    @Override
    public int getPhase() {
        return Integer.MAX_VALUE - 1;
    }

    /** The readiness steps after a function's deployment, on its progress group. */
    private static final class ReadinessWatch {
        final String name;
        final ProgressGroup group;
        final ReadinessSteps steps;
        final String deployed;
        final long deadline;
        Duration pause = FIRST_READINESS_POLL; // guarded by the deployment's lock
        Future<?> next; // guarded by the deployment's lock

        ReadinessWatch(String name, ProgressGroup group, ReadinessSteps steps, String deployed, long deadline) {
            this.name = name;
            this.group = group;
            this.steps = steps;
            this.deployed = deployed;
            this.deadline = deadline;
        }
    }

    /** One function's deployment: its tries in a row, on one progress group. */
    private static final class Run {
        final FunctionDefinition function;
        final int attempt;
        ProgressGroup group;
        Future<?> next;
        boolean deploying; // guarded by the deployment's lock

        Run(FunctionDefinition function, int attempt, @Nullable ProgressGroup group) {
            this.function = function;
            this.attempt = attempt;
            this.group = group;
        }
    }
}
