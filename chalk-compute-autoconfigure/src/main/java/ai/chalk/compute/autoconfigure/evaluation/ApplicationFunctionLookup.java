package ai.chalk.compute.autoconfigure.evaluation;

import ai.chalk.compute.autoconfigure.function.ChalkFunctions;
import ai.chalk.compute.autoconfigure.function.FunctionDeploymentState;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.evaluation.FunctionLookup;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import io.grpc.Status;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * Names of the application's own functions and scorers, as an evaluation's task or scorers: the background deployment
 * of that function is waited for, then its version is the one the server now serves. Other names are left to the
 * server (the function's current version).
 */
final class ApplicationFunctionLookup implements FunctionLookup {

    private final ChalkFunctions functions;
    private final FunctionDeployer deployer;

    ApplicationFunctionLookup(ChalkFunctions functions, FunctionDeployer deployer) {
        this.functions = Objects.requireNonNull(functions, "functions");
        this.deployer = Objects.requireNonNull(deployer, "deployer");
    }

    @Override
    public Optional<String> versionId(String name, Duration timeout) {
        if (functions.function(name).isEmpty()) {
            return Optional.empty();
        }
        FunctionDeploymentState state;
        try {
            state = functions.awaitDeployment(name, timeout).orElseThrow();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ChalkComputeException(
                    Status.Code.CANCELLED, "interrupted waiting for the deployment of the function " + name);
        }
        return switch (state.status()) {
            case DEPLOYED -> Optional.of(deployer.current(name).id());
            case FAILED ->
                throw new ChalkComputeException(
                        Status.Code.FAILED_PRECONDITION,
                        "the function " + name + " (bean '" + state.beanName() + "', " + state.location()
                                + ") failed to deploy, so no evaluation can use it: " + state.error());
            default ->
                throw new ChalkComputeException(
                        Status.Code.DEADLINE_EXCEEDED,
                        "the function " + name + " is still "
                                + state.status().toString().toLowerCase(Locale.ROOT)
                                + " after " + timeout + (state.error() != null ? " (" + state.error() + ")" : "")
                                + "; chalk.compute.functions.wait-timeout sets how long an evaluation waits");
        };
    }
}
