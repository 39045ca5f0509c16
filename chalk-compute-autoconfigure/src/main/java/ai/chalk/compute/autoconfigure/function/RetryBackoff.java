package ai.chalk.compute.autoconfigure.function;

import java.time.Duration;
import java.util.Objects;

/**
 * How long a function's deployment waits before trying again after it could not reach the server: {@code initial}
 * after the first failure, twice as long after each next one, never longer than {@code max}.
 *
 * @param initial the wait after the first failure
 * @param max     the longest wait
 */
public record RetryBackoff(Duration initial, Duration max) {

    /** Checks that both are positive and that {@code max} is not shorter than {@code initial}. */
    public RetryBackoff {
        Objects.requireNonNull(initial, "initial");
        Objects.requireNonNull(max, "max");
        if (initial.isNegative() || initial.isZero() || max.compareTo(initial) < 0) {
            throw new IllegalArgumentException(
                    "the backoff must start positive and not exceed its maximum, got " + initial + " to " + max);
        }
    }

    /**
     * The wait after a number of failures in a row.
     *
     * @param failures how many tries failed, 1 or more
     * @return {@code initial * 2^(failures - 1)}, at most {@code max}
     */
    public Duration delay(int failures) {
        Duration delay = initial;
        for (int i = 1; i < failures && delay.compareTo(max) < 0; i++) {
            delay = delay.multipliedBy(2);
        }
        return delay.compareTo(max) > 0 ? max : delay;
    }
}
