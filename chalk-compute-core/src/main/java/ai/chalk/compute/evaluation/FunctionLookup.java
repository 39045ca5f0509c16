package ai.chalk.compute.evaluation;

import java.time.Duration;
import java.util.Optional;

/**
 * How an {@link EvaluationClient} turns a function's name, given as a task or scorer, into the version to pin, before
 * asking the server for the function's current version. A Spring application's client waits here for the background
 * deployment of its own {@code @ChalkFunction} and {@code @ChalkScorer} methods, so a name given right after startup
 * pins the version the application deployed, not an older one.
 */
@FunctionalInterface
public interface FunctionLookup {

    /** Knows no function: every name is the server's current version. */
    FunctionLookup NONE = (name, timeout) -> Optional.empty();

    /**
     * The version to pin for the function of this name.
     *
     * @param name    the function's registered name
     * @param timeout how long a deployment under way may be waited for
     * @return its version id, or empty when this lookup does not know the function
     * @throws ai.chalk.compute.error.ChalkComputeException when the function's deployment failed or did not finish
     *     in time
     */
    Optional<String> versionId(String name, Duration timeout);
}
