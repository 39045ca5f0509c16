package ai.chalk.compute.server.threads;

import java.util.HashMap;
import java.util.Map;

/**
 * Counts of something each holding server threads (running commands, calls under way, queued function calls), kept
 * per environment against a server-wide limit of which one environment holds at most half: a tenant at its share holds
 * back only its own, never every other environment's.
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

    /** Takes a place for {@code environment}; null when taken, else why not (and nothing is taken). */
    public synchronized Refusal tryTake(String environment) {
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

    /** Gives back one place {@code environment} took; nothing when it holds none (a place is given back once). */
    public synchronized void give(String environment) {
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
}
