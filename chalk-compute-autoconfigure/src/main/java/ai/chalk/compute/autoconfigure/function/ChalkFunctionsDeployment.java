package ai.chalk.compute.autoconfigure.function;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.function.deploy.FunctionVersion;
import ai.chalk.compute.function.deploy.WorkerMode;
import ai.chalk.compute.progress.ProgressDisplay;
import ai.chalk.compute.progress.ProgressGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.CustomizableThreadFactory;

/**
 * Deploys the application's functions in the background once the context has started: one code snapshot of the
 * class path for all of them, then each function's ensure request through {@link FunctionDeployer} (which uploads
 * only the blobs the server lacks), several at once. Each function is a group on the progress display, and its
 * state in {@link ChalkFunctions} moves from {@code DEPLOYING} to {@code DEPLOYED} or {@code FAILED}.
 *
 * <p>Startup is not held back unless {@code chalk.compute.functions.wait-on-startup=true}. A failure is logged at
 * ERROR with the server's message and the method's location as a stack frame reads, without the SDK's frames.
 * Workers boot the application itself ({@code spring:} and its {@code @SpringBootApplication} class), so each
 * function runs on its bean there.
 */
public class ChalkFunctionsDeployment implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(ChalkFunctionsDeployment.class);

    private final ChalkFunctions functions;
    private final FunctionDeployer deployer;
    private final Supplier<CodeSnapshot> code;
    private final Supplier<Optional<Class<?>>> mainClass;
    private final ProgressDisplay progress;
    private final boolean waitOnStartup;
    private final Duration waitTimeout;
    private final int concurrency;
    private volatile ExecutorService executor;
    private volatile CompletableFuture<Void> done;

    /**
     * @param functions     the functions to deploy (those discovered)
     * @param deployer      sends the ensure requests and uploads
     * @param code          makes the code snapshot, once per start
     * @param mainClass     finds the application class workers boot, if there is one
     * @param progress      where each function's deployment is shown
     * @param waitOnStartup whether {@link #start()} waits for every deployment to finish
     * @param waitTimeout   how long it waits at most
     * @param concurrency   how many functions deploy at once
     */
    public ChalkFunctionsDeployment(
            ChalkFunctions functions,
            FunctionDeployer deployer,
            Supplier<CodeSnapshot> code,
            Supplier<Optional<Class<?>>> mainClass,
            ProgressDisplay progress,
            boolean waitOnStartup,
            Duration waitTimeout,
            int concurrency) {
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
    }

    @Override
    public void start() {
        List<FunctionDefinition> pending = functions.registry().definitions().stream()
                .filter(d -> functions
                        .function(d.name())
                        .map(s -> s.status() == FunctionDeploymentState.Status.DISCOVERED)
                        .orElse(false))
                .toList();
        if (pending.isEmpty()) {
            done = CompletableFuture.completedFuture(null);
            return;
        }
        CustomizableThreadFactory threads = new CustomizableThreadFactory("chalk-functions-deploy-");
        threads.setDaemon(true); // a deployment never keeps the JVM alive on its own
        executor = Executors.newFixedThreadPool(Math.min(concurrency, pending.size()), threads);
        Optional<Class<?>> application = mainClass.get();
        List<CompletableFuture<?>> each = new ArrayList<>();
        // one snapshot for every function: the class path is the same for all
        CompletableFuture<CodeSnapshot> snapshot = application.isPresent()
                ? CompletableFuture.supplyAsync(code, executor)
                : CompletableFuture.completedFuture(null);
        // the first deployment uploads the code the server lacks; the others follow it, concurrently, and find
        // the blobs there (started together, each would upload the whole class path)
        CompletableFuture<?> first = null;
        for (FunctionDefinition function : pending) {
            functions.update(function.name(), s -> s.with(FunctionDeploymentState.Status.DEPLOYING, null, null));
            ProgressGroup group = progress.open("Function \"" + function.name() + "\"");
            group.step("Deploying");
            CompletableFuture<CodeSnapshot> ready = first == null
                    ? snapshot
                    : first.handle((ignored, failure) -> null).thenCompose(ignored -> snapshot);
            CompletableFuture<?> deployed = ready.thenApplyAsync(c -> deploy(function, application, c), executor)
                    .whenComplete((version, failure) -> finish(function, group, version, failure));
            first = first == null ? deployed : first;
            each.add(deployed);
        }
        done = CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
                .handle((ignored, failure) -> null) // failures are recorded per function
                .thenRun(() -> snapshot.thenAccept(c -> {
                    if (c != null) {
                        c.close();
                    }
                }));
        if (waitOnStartup) {
            awaitDeployments(waitTimeout);
        }
    }

    private FunctionVersion deploy(FunctionDefinition function, Optional<Class<?>> application, CodeSnapshot snapshot) {
        Class<?> main = application.orElseThrow(
                () -> new IllegalStateException(
                        "the context has no"
                                + " @SpringBootApplication (or @SpringBootConfiguration) class for workers to boot the application from"));
        // the functions of one bean share replicas: each function's deployment serves all of them
        List<FunctionDefinition> served = DeploymentUnits.servedWith(function, functions);
        return deployer.deploy(function, served, snapshot, WorkerMode.spring(main), false);
    }

    private void finish(FunctionDefinition function, ProgressGroup group, FunctionVersion version, Throwable failure) {
        if (failure == null) {
            functions.update(
                    function.name(), s -> s.with(FunctionDeploymentState.Status.DEPLOYED, version.version(), null));
            group.succeed("Deployed version " + version.version());
            log.info("Chalk function {} deployed: version {}", function.name(), version.version());
            return;
        }
        String message = messageOf(failure);
        if (executor == null) {
            // stopped while deploying: the application is shutting down, which is no failure of the function
            functions.update(function.name(), s -> s.with(FunctionDeploymentState.Status.DISCOVERED, null, null));
            group.close();
            return;
        }
        functions.update(function.name(), s -> s.with(FunctionDeploymentState.Status.FAILED, null, message));
        group.fail(message);
        // the user's method is where to look; the SDK's frames would only hide it
        log.error(
                "Chalk function {} failed to deploy: {}\n\tat {}",
                function.name(),
                message,
                SourceLocation.of(function.method()));
    }

    /** The server's message, without a wrapper's. */
    static String messageOf(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof ChalkComputeException chalk) {
            return chalk.statusCode() + ": " + chalk.serverMessage();
        }
        return cause.getMessage() != null ? cause.getMessage() : cause.toString();
    }

    /**
     * Waits until every function is deployed or failed.
     *
     * @param timeout how long to wait at most
     * @return {@code true} when all finished in time
     */
    public boolean awaitDeployments(Duration timeout) {
        CompletableFuture<Void> current = done;
        if (current == null) {
            return false;
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
        ExecutorService running = executor;
        executor = null; // first, so deployments cut short here are not reported as failures
        done = null;
        if (running != null) {
            running.shutdownNow();
        }
    }

    @Override
    public boolean isRunning() {
        return done != null;
    }

    /** After the embedded server (which starts early), so the deployment has a server to talk to. */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE - 4096;
    }
}
