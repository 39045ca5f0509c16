package ai.chalk.compute.function;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * How each call of a function is run, as declared on {@link ChalkFunction} or {@link ChalkScorer} (or as
 * defaults on {@link ChalkClass}); empty values leave the choice to the deployment.
 *
 * @param timeout     how long one call may run
 * @param retries     how often a failed call is retried
 * @param concurrency how many calls one replica runs at the same time
 */
public record CallOptions(Optional<Duration> timeout, OptionalInt retries, OptionalInt concurrency) {

    /** Options that leave every choice to the deployment. */
    public static final CallOptions DEFAULTS =
            new CallOptions(Optional.empty(), OptionalInt.empty(), OptionalInt.empty());

    /** Checks for nulls. */
    public CallOptions {
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(retries, "retries");
        Objects.requireNonNull(concurrency, "concurrency");
    }

    /**
     * These options, with each one left empty taken from the fallback.
     *
     * @param fallback the options to fall back on, such as a {@link ChalkClass}'s
     * @return the combined options
     */
    public CallOptions orElse(CallOptions fallback) {
        return new CallOptions(
                timeout.or(fallback::timeout),
                retries.isPresent() ? retries : fallback.retries,
                concurrency.isPresent() ? concurrency : fallback.concurrency);
    }
}
