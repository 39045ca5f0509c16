package ai.chalk.compute.server.auth;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Slows down a peer that keeps failing to authenticate: after {@value #FREE} failures within the window, each answer
 * to it, right or wrong, waits twice as long as the one before, up to {@link #MAX_DELAY}; a quiet window forgets it.
 * Guessing a secret stays hopeless, and a flood of wrong guesses costs the server timers, not threads. A peer is its
 * key ({@code PeerAddress}): its address without the port, an IPv6 one by its /64, a loopback one by its local user, so
 * that a new connection does not start afresh.
 */
final class FailedAttempts {

    static final int FREE = 5;
    static final Duration MAX_DELAY = Duration.ofSeconds(8);
    private static final Duration WINDOW = Duration.ofMinutes(5);
    private static final Duration FIRST_DELAY = Duration.ofMillis(250);
    /** Peers remembered at once; the oldest is forgotten first, so a spray of addresses cannot fill the heap. */
    private static final int PEERS = 10_000;

    private final Clock clock;
    private final Map<String, Failures> peers = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Failures> eldest) {
            return size() > PEERS;
        }
    };

    private record Failures(int count, Instant last) {}

    FailedAttempts(Clock clock) {
        this.clock = clock;
    }

    /** How long to hold the next answer to {@code peer}. */
    synchronized Duration delay(String peer) {
        Failures f = current(peer);
        if (f == null || f.count() < FREE) {
            return Duration.ZERO;
        }
        long factor = 1L << Math.min(f.count() - FREE, 16);
        Duration d = FIRST_DELAY.multipliedBy(factor);
        return d.compareTo(MAX_DELAY) > 0 ? MAX_DELAY : d;
    }

    /** Records a failure of {@code peer}. */
    synchronized void failed(String peer) {
        Failures f = current(peer);
        peers.put(peer, new Failures(f == null ? 1 : f.count() + 1, clock.instant()));
    }

    private Failures current(String key) {
        Failures f = peers.get(key);
        if (f != null && f.last().plus(WINDOW).isBefore(clock.instant())) {
            peers.remove(key);
            return null;
        }
        return f;
    }
}
