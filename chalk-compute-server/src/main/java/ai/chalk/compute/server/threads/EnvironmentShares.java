package ai.chalk.compute.server.threads;

import ai.chalk.compute.server.error.ComputeException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Counts of something each holding server threads or memory (running commands, calls under way, queued function calls),
 * kept per environment against a server-wide limit of which one environment holds at most half: a tenant at its share
 * holds back only its own, never every other environment's. A place is a {@link Place} its holder closes once done.
 */
public final class EnvironmentShares {

    /** Why a place was refused. */
    public enum Refusal {
        /** The environment holds its half already. */
        ENVIRONMENT_SHARE,
        /** The server holds its limit. */
        SERVER_LIMIT
    }

    private final int limit;
    private final int share;
    private int held;
    /** Places held per environment; an environment holding none has no entry (guarded by this). */
    private final Map<String, Integer> byEnvironment = new HashMap<>();

    /**
     * @param what  what is counted, for the error when the limit is too small ("running commands")
     * @param limit the most places held at once, server-wide (at least 2: one environment holds half)
     */
    public EnvironmentShares(String what, int limit) {
        this(what, atLeastTwo(what, limit), limit / 2);
    }

    private static int atLeastTwo(String what, int limit) {
        if (limit < 2) {
            throw new IllegalArgumentException("the limit on " + what + " must be at least 2, not " + limit);
        }
        return limit;
    }

    /**
     * @param what  what is counted, for the error when the limit is too small
     * @param limit the most places held at once, server-wide
     * @param share the most one key holds (at least 1, at most the limit)
     */
    public EnvironmentShares(String what, int limit, int share) {
        if (share < 1 || share > limit) {
            throw new IllegalArgumentException(
                    "one key's share of " + what + " must be between 1 and the limit " + limit + ", not " + share);
        }
        this.limit = limit;
        this.share = share;
    }

    /** What a refusal says to the client: what is held, by whom, and what to do. */
    @FunctionalInterface
    public interface Refusals {
        /**
         * @param refusal why the place was refused
         * @param counts  the counts that refused it, for the figures
         * @param key     whose place it was (an environment, or a caller)
         */
        String message(Refusal refusal, EnvironmentShares counts, String key);
    }

    /**
     * Takes a place for {@code key}, given back when the returned place is closed.
     *
     * @throws ComputeException (RESOURCE_EXHAUSTED) with the message {@code refusals} gives, when the key holds its
     *     share already or the server its limit; nothing is taken then
     */
    public Place take(String key, Refusals refusals) {
        Refusal refusal = tryTake(key);
        if (refusal != null) {
            throw ComputeException.exhausted(refusals.message(refusal, this, key));
        }
        return new Place(key);
    }

    /**
     * Takes a place for {@code key} whatever the limits: for what holds one already, such as a sandbox adopted after
     * a restart, which was admitted under the same limits before.
     */
    public synchronized Place hold(String key) {
        held++;
        byEnvironment.merge(key, 1, Integer::sum);
        return new Place(key);
    }

    /** Takes a place for {@code environment}; null when taken, else why not (and nothing is taken). */
    private synchronized Refusal tryTake(String environment) {
        int mine = byEnvironment.getOrDefault(environment, 0);
        if (mine >= share()) {
            return Refusal.ENVIRONMENT_SHARE;
        }
        if (held >= limit) {
            return Refusal.SERVER_LIMIT;
        }
        held++;
        byEnvironment.put(environment, mine + 1);
        return null;
    }

    private synchronized void give(String environment) {
        if (!byEnvironment.containsKey(environment)) {
            return;
        }
        held--;
        int left = byEnvironment.get(environment) - 1;
        if (left <= 0) {
            byEnvironment.remove(environment);
        } else {
            byEnvironment.put(environment, left);
        }
    }

    /** Places held now, server-wide. */
    public synchronized int held() {
        return held;
    }

    /** Places {@code environment} holds now. */
    public synchronized int held(String environment) {
        return byEnvironment.getOrDefault(environment, 0);
    }

    /** The server-wide limit. */
    public int limit() {
        return limit;
    }

    /** What one environment (or key) may hold: half the limit, unless told otherwise. */
    public int share() {
        return share;
    }

    /**
     * One place held: closing it gives it back, once however many times it is closed (a holder may end on several
     * paths, and a second give-back would free another holder's place).
     */
    public final class Place implements AutoCloseable {
        private final String key;
        private final AtomicBoolean given = new AtomicBoolean();

        private Place(String key) {
            this.key = key;
        }

        @Override
        public void close() {
            if (given.compareAndSet(false, true)) {
                give(key);
            }
        }
    }
}
