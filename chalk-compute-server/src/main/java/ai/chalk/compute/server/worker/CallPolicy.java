package ai.chalk.compute.server.worker;

import java.time.Duration;

/**
 * How a revision's calls are run: how many one replica takes at once, and how often a call is tried again when its
 * worker dies under it. A failure of the function's own code is its answer and is never tried again.
 *
 * @param maxConcurrent     calls one replica runs at once; 0 for no limit (further calls wait for room, or for a new
 *                          replica while fewer than the maximum run)
 * @param maxRetries        further attempts after a worker died during the call
 * @param initialBackoff    the wait before the first retry
 * @param backoffMultiplier how much each further wait grows
 * @param maxBackoff        the longest wait
 */
public record CallPolicy(
        int maxConcurrent, int maxRetries, Duration initialBackoff, double backoffMultiplier, Duration maxBackoff) {

    /** No concurrency limit, no retries. */
    public static final CallPolicy DEFAULT = new CallPolicy(0, 0, Duration.ofMillis(100), 2.0, Duration.ofSeconds(5));

    public CallPolicy {
        if (maxConcurrent < 0
                || maxRetries < 0
                || initialBackoff.isNegative()
                || backoffMultiplier < 1
                || maxBackoff.isNegative()) {
            throw new IllegalArgumentException("invalid call policy " + maxConcurrent + "/" + maxRetries);
        }
    }

    /** Whether a replica with this many calls in flight can take one more. */
    boolean hasRoom(int inFlight) {
        return maxConcurrent == 0 || inFlight < maxConcurrent;
    }

    /** The wait before retry number {@code retry} (1 for the first). */
    Duration backoff(int retry) {
        double millis = initialBackoff.toMillis() * Math.pow(backoffMultiplier, retry - 1);
        return millis >= maxBackoff.toMillis() ? maxBackoff : Duration.ofMillis((long) millis);
    }
}
