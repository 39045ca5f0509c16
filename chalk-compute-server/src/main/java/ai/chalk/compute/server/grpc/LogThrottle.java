package ai.chalk.compute.server.grpc;

import java.time.Duration;
import org.slf4j.Logger;

/**
 * A warning anyone on the network can trigger, logged at most once per window: the first occurrence in
 * a window is logged (one line, no stack trace) with how many were left out since the last line, so a
 * flood of bad requests costs a line every window rather than filling the disk.
 */
public final class LogThrottle {

    private final Logger log;
    private final long windowNanos;
    private long windowStart;
    private boolean logged;
    private long suppressed;

    public LogThrottle(Logger log, Duration window) {
        this.log = log;
        this.windowNanos = window.toNanos();
    }

    /** Logs {@code message} as a WARN unless a line was already logged in this window. */
    public void warn(String message) {
        long left;
        synchronized (this) {
            long now = System.nanoTime();
            if (logged && now - windowStart < windowNanos) {
                suppressed++;
                return;
            }
            windowStart = now;
            logged = true;
            left = suppressed;
            suppressed = 0;
        }
        if (left == 0) {
            log.warn(message);
        } else {
            log.warn("{} ({} more like it since the last such line were not logged)", message, left);
        }
    }
}
