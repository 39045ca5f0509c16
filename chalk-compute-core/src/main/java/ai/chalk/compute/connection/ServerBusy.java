package ai.chalk.compute.connection;

import java.time.Duration;
import java.util.Optional;

/**
 * A file transfer over a signed link that the server answered {@code 503}: it serves as many transfers at once as it
 * may, and says when to try again ({@code Retry-After}). The SDK's downloads and uploads wait and try again a few
 * times before the refusal is their answer.
 */
public final class ServerBusy {

    /** Tries of one transfer the server is too busy for, the last one's refusal being the answer. */
    public static final int TRIES = 6;

    private static final Duration LONGEST_WAIT = Duration.ofSeconds(10);

    private ServerBusy() {}

    /**
     * Whether to try a transfer again after the server answered {@code status}: {@code 503} on one of the first
     * {@link #TRIES} tries, once the wait its {@code Retry-After} asks for (1 to 10 seconds) has passed.
     *
     * @param status     the answer's HTTP status
     * @param retryAfter the answer's {@code Retry-After} header, in seconds, if any
     * @param tries      the tries made so far, this one included
     * @throws InterruptedException when the wait is interrupted
     */
    public static boolean waited(int status, Optional<String> retryAfter, int tries) throws InterruptedException {
        if (status != 503 || tries >= TRIES) {
            return false;
        }
        long seconds;
        try {
            seconds = Long.parseLong(retryAfter.orElse("1").trim());
        } catch (NumberFormatException e) {
            seconds = 1; // a date, or nothing readable: a second
        }
        Thread.sleep(Math.max(1_000, Math.min(LONGEST_WAIT.toMillis(), seconds * 1_000)));
        return true;
    }
}
