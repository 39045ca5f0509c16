package ai.chalk.compute.function.deploy;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.function.FunctionDefinition;
import ai.chalk.compute.function.catalog.FunctionVersion;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A function deployed by {@link FunctionDeployer#deploy(Class[])}: its deployment runs in the background, and this
 * handle waits for it and manages the function's versions afterwards.
 * <pre>{@code
 * List<DeployedFunction> deployed = client.functions().deploy(Pricing.class);
 * DeployedFunction price = deployed.get(0);
 * FunctionVersion v = price.await();            // the version serving it, or the deployment's failure
 * price.deploy(true);                           // a new version of the same code
 * price.rollback(v.id());                       // back to the first one
 * }</pre>
 * A deployment that failed and whose handle was never {@linkplain #await() awaited} is reported on {@code stderr}
 * when the program exits, which then exits with status 1. Thread-safe.
 */
public final class DeployedFunction {

    private final FunctionDeployer deployer;
    private final FunctionDefinition definition;
    private final List<FunctionDefinition> served;
    private final CompletableFuture<FunctionVersion> deployment;
    private final AtomicBoolean observed = new AtomicBoolean();

    DeployedFunction(
            FunctionDeployer deployer,
            FunctionDefinition definition,
            List<FunctionDefinition> served,
            CompletableFuture<FunctionVersion> deployment) {
        this.deployer = Objects.requireNonNull(deployer, "deployer");
        this.definition = Objects.requireNonNull(definition, "definition");
        this.served = List.copyOf(served);
        this.deployment = Objects.requireNonNull(deployment, "deployment");
    }

    /** The function's deployed name. */
    public String name() {
        return definition.name();
    }

    /** The function's local definition: its method, parameters and types. */
    public FunctionDefinition definition() {
        return definition;
    }

    /** Whether the background deployment has ended, deployed or failed. */
    public boolean isDone() {
        return deployment.isDone();
    }

    /**
     * Waits for the background deployment.
     *
     * @return the version serving the function
     * @throws ChalkComputeException when the server refused the deployment (the same exception a synchronous deploy
     *                               throws)
     * @throws RuntimeException      when the deployment failed otherwise, such as the class path not being readable
     */
    public FunctionVersion await() {
        observed.set(true);
        try {
            return deployment.join();
        } catch (CompletionException | CancellationException e) {
            throw unwrap(e);
        }
    }

    /**
     * Waits for the background deployment at most {@code timeout}.
     *
     * @param timeout how long to wait
     * @return the version serving the function
     * @throws ChalkComputeException when the deployment failed, or did not end in time ({@code DEADLINE_EXCEEDED};
     *                               it goes on in the background)
     */
    public FunctionVersion await(Duration timeout) {
        observed.set(true);
        try {
            return deployment.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw unwrap(e);
        } catch (TimeoutException e) {
            throw new ChalkComputeException(
                    io.grpc.Status.Code.DEADLINE_EXCEEDED,
                    "the deployment of " + name() + " did not end within " + timeout
                            + "; it goes on in the background");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ChalkComputeException(
                    io.grpc.Status.Code.CANCELLED, "interrupted waiting for the deployment of " + name());
        }
    }

    /**
     * The background deployment as a future, to compose with others. Asking for it counts as observing it: a failure
     * is then yours to handle and is not reported at exit.
     *
     * @return the future of the version serving the function
     */
    public CompletableFuture<FunctionVersion> deployment() {
        observed.set(true);
        return deployment.copy();
    }

    /**
     * Deploys the function again from a fresh snapshot of the class path, now. An unchanged function keeps its
     * version unless {@code forceNewVersion}.
     *
     * @param forceNewVersion create a new version even when nothing changed
     * @return the version serving the function now
     * @throws ChalkComputeException when the server refuses the deploy
     */
    public FunctionVersion deploy(boolean forceNewVersion) {
        try (CodeSnapshot code = CodeSnapshot.ofClassPath(List.of(definition.declaringClass()))) {
            return deployer.deploy(definition, served, code, WorkerMode.PLAIN, forceNewVersion);
        }
    }

    /**
     * Every version of the function, oldest first, with the current one marked.
     *
     * @return its versions
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function does not exist (yet, or any more)
     */
    public List<FunctionVersion> versions() {
        return deployer.versions(name());
    }

    /**
     * The function's current version, as the server says now (after a rollback or a deploy from elsewhere).
     *
     * @return its current version
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the function does not exist (yet, or any more)
     */
    public FunctionVersion refresh() {
        return deployer.current(name());
    }

    /**
     * Makes a version of the function current again.
     *
     * @param versionId the version's id, one of {@link #versions()}
     * @throws ai.chalk.compute.error.FunctionNotFoundException when the version is unknown
     */
    public void rollback(String versionId) {
        deployer.rollback(refresh().functionId(), versionId);
    }

    /**
     * Waits for the background deployment, then until the function's replicas serve (as many as its
     * {@code minReplicas}; at once for a function that scales from zero), showing the count as it changes in the
     * client's progress display: {@code │ › Waiting for replicas 1/2}.
     *
     * @param timeout how long to wait for both
     * @return the readiness of the function's replicas
     * @throws ChalkComputeException as {@link #await(Duration)}; {@code FAILED_PRECONDITION} when its replicas cannot
     *                               start, {@code DEADLINE_EXCEEDED} when not ready in time
     */
    public ai.chalk.compute.scaling.Readiness awaitReady(Duration timeout) {
        long start = System.nanoTime();
        await(timeout);
        Duration left = timeout.minusNanos(System.nanoTime() - start);
        int wanted = definition.deployment().minReplicas().orElse(0);
        return new ai.chalk.compute.scaling.ReadinessWait(deployer.progress(), "Function \"" + name() + "\"")
                .await(
                        () -> deployer.readiness(name(), Duration.ofSeconds(30)),
                        wanted,
                        left.isNegative() ? Duration.ZERO : left);
    }

    /** Deletes the function and all its versions. */
    public void delete() {
        deployer.delete(name());
    }

    /** The deployment's future, without observing it. */
    CompletableFuture<FunctionVersion> deploymentUnobserved() {
        return deployment;
    }

    /** Waits for the deployment to end, failed or not, without observing it: at exit. */
    void awaitQuietly() {
        if (!observed.get()) {
            deployment.handle((version, failure) -> null).join();
        }
    }

    /** Whether the deployment failed and nobody awaited it: what is reported at exit. */
    boolean unobservedFailure() {
        return !observed.get() && deployment.isCompletedExceptionally();
    }

    /** What failed, for the report at exit: the function and where it is declared. */
    String operation() {
        return "Deploying function \"" + name() + "\" at " + location();
    }

    /** Why the deployment failed; only called once it did. */
    Throwable failure() {
        try {
            deployment.join();
            throw new IllegalStateException(name() + " did not fail");
        } catch (CompletionException | CancellationException e) {
            return unwrap(e);
        }
    }

    /** {@code com.acme.Pricing.price(Pricing.java)}, as a stack frame shows it, so that an IDE links it. */
    private String location() {
        Class<?> type = definition.declaringClass();
        Class<?> outer = type;
        while (outer.getEnclosingClass() != null) {
            outer = outer.getEnclosingClass();
        }
        return type.getName() + "." + definition.method().getName() + "(" + outer.getSimpleName() + ".java)";
    }

    private static RuntimeException unwrap(Exception e) {
        Throwable cause = e.getCause() != null && !(e instanceof CancellationException) ? e.getCause() : e;
        return cause instanceof RuntimeException r
                ? r
                : new ChalkComputeException(io.grpc.Status.Code.UNKNOWN, cause.toString(), cause);
    }

    @Override
    public String toString() {
        return "DeployedFunction[" + name() + ", "
                + (deployment.isDone() ? (deployment.isCompletedExceptionally() ? "failed" : "deployed") : "deploying")
                + "]";
    }
}
