package ai.chalk.compute.server.exec;

import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ByteBudget} shared between environments, of which one environment holds at most half: a tenant whose calls
 * fill their share (answers it does not read, a large dataset behind a slow task) holds back only its own, not every
 * other environment's.
 */
public final class EnvironmentBytes {

    /** Why bytes were refused. */
    public enum Refusal {
        /** The environment holds its share already, or would with these bytes. */
        ENVIRONMENT_SHARE,
        /** The budget cannot take them. */
        BUDGET,
        /**
         * The environments together hold the whole budget, reserved and counted (each up to its share), and this one,
         * holding bytes, its even part of it; or they hold twice the budget ({@link #full}).
         */
        SERVER_FULL
    }

    private final ByteBudget budget;
    private final long share;
    /** Bytes held per environment; an environment holding nothing has no entry (guarded by this). */
    private final Map<String, Long> held = new HashMap<>();
    /** Bytes {@link #count counted} per environment, apart from those reserved (guarded by this). */
    private final Map<String, Long> counted = new HashMap<>();
    /** The sum of {@link #counted} (guarded by this). */
    private long countedTotal;

    public EnvironmentBytes(ByteBudget budget) {
        this(budget, 0);
    }

    /**
     * @param unit what one environment may always hold, up to the whole budget, when half of it is less: the largest
     *             piece a single call reserves at once (stdin that comes in one message), which half a small budget
     *             would refuse even on an idle server
     */
    public EnvironmentBytes(ByteBudget budget, long unit) {
        this.budget = budget;
        this.share = Math.max(budget.limit() / 2, Math.min(budget.limit(), unit));
    }

    /** Reserves {@code bytes} for {@code environment}; null when reserved, else why not (and nothing is reserved). */
    public synchronized @Nullable Refusal tryReserve(String environment, long bytes) {
        if (bytes <= 0) {
            return null;
        }
        long mine = held.getOrDefault(environment, 0L);
        if (mine + bytes > share) {
            return Refusal.ENVIRONMENT_SHARE;
        }
        if (!budget.tryReserve(bytes)) {
            return Refusal.BUDGET;
        }
        held.put(environment, mine + bytes);
        return null;
    }

    /**
     * Counts {@code bytes} for {@code environment}, whether or not they fit, apart from what it reserves and not
     * against the budget: bytes already held when they are counted (a message a stream has sent), which the holder
     * bounds otherwise. An environment whose reserved and counted bytes reach its share is {@link #full}; what it
     * reserves is checked against its share alone, so that its streams do not refuse its largest answers.
     */
    public synchronized void count(String environment, long bytes) {
        if (bytes > 0) {
            counted.merge(environment, bytes, Long::sum);
            countedTotal += bytes;
        }
    }

    /** Gives back bytes {@link #count counted} for {@code environment}. */
    public synchronized void uncount(String environment, long bytes) {
        if (bytes > 0) {
            countedTotal -= Math.min(bytes, counted.getOrDefault(environment, 0L));
            drop(counted, environment, bytes);
        }
    }

    /**
     * Why {@code environment} can take no more now; null if it can. It cannot when what it reserved and counted reach
     * its share. Counted bytes are not the budget's, so each environment's share alone would bound the server by the
     * number of environments times a share; so an environment holding bytes cannot either when the environments
     * together hold the whole budget and this one its even part of it (the budget divided among the environments
     * holding bytes, itself included), nor when they hold twice the budget, which bounds what environments admitted
     * one after the other (each at a smaller even part) hold together. What the environments hold together counts
     * each one up to its share: one tenant's reserved answers and counted streams, each checked against its share
     * apart, may pass it, and must not refuse the others. An environment holding nothing is not refused for what
     * others hold. So the bytes held stay under three budgets (the budget's reservations, and counted bytes admitted
     * below twice it) and about one message per stream open (each is checked at its start, before it holds anything).
     */
    public synchronized @Nullable Refusal full(String environment) {
        long mine = held.getOrDefault(environment, 0L) + counted.getOrDefault(environment, 0L);
        if (mine >= share) {
            return Refusal.ENVIRONMENT_SHARE;
        }
        long limit = budget.limit();
        // the raw sum is never less than the one up to shares: below the budget, no walk over the environments
        if (mine == 0 || budget.used() + countedTotal < limit) {
            return null;
        }
        long over = heldUpToShares() - limit; // past the budget; compared so that no sum overflows
        if (over >= 0 && (over >= limit || mine >= evenPart(environment))) {
            return Refusal.SERVER_FULL;
        }
        return null;
    }

    /** What the environments hold together, each counted up to its share. */
    private long heldUpToShares() {
        long sum = 0;
        for (Map.Entry<String, Long> e : held.entrySet()) {
            sum += Math.min(share, e.getValue() + counted.getOrDefault(e.getKey(), 0L));
        }
        for (Map.Entry<String, Long> e : counted.entrySet()) {
            if (!held.containsKey(e.getKey())) {
                sum += Math.min(share, e.getValue());
            }
        }
        return sum;
    }

    private long evenPart(String environment) {
        return budget.limit() / holders(environment);
    }

    /** The environments holding bytes, {@code environment} among them. */
    private int holders(String environment) {
        int holders = held.size();
        for (String e : counted.keySet()) {
            if (!held.containsKey(e)) {
                holders++;
            }
        }
        return held.containsKey(environment) || counted.containsKey(environment) ? holders : holders + 1;
    }

    /** Gives back bytes {@code environment} reserved. */
    public synchronized void release(String environment, long bytes) {
        if (bytes <= 0) {
            return;
        }
        budget.release(bytes);
        drop(held, environment, bytes);
    }

    private static void drop(Map<String, Long> bytesOf, String environment, long bytes) {
        long left = bytesOf.getOrDefault(environment, 0L) - bytes;
        if (left <= 0) {
            bytesOf.remove(environment);
        } else {
            bytesOf.put(environment, left);
        }
    }

    private synchronized long reserved(String environment) {
        return held.getOrDefault(environment, 0L);
    }

    private synchronized String streamed(String environment) {
        long c = counted.getOrDefault(environment, 0L);
        return c == 0 ? "" : " (and " + c + " more in streamed messages)";
    }

    private synchronized String serverFull(String environment) {
        long together = heldUpToShares();
        long limit = budget.limit();
        return "the environments together hold " + together + " bytes of " + budget.what() + " (" + budget.used()
                + " reserved, " + countedTotal + " in streamed messages; each counted up to its share of " + share
                + "), "
                + (together - limit >= limit
                        ? "twice the server's " + limit
                        : "the server's " + limit + " or more, and this environment " + held(environment)
                                + ", its even part of them (" + evenPart(environment) + ") or more");
    }

    /** The bytes {@code environment} holds now: reserved and counted. */
    public synchronized long held(String environment) {
        return held.getOrDefault(environment, 0L) + counted.getOrDefault(environment, 0L);
    }

    /** What one environment may hold: half the budget. */
    public long share() {
        return share;
    }

    /** The budget shared. */
    public ByteBudget budget() {
        return budget;
    }

    /** The bytes of {@code environment}: what one of its calls reserves and releases. */
    public Account of(String environment) {
        return new Account(environment);
    }

    /**
     * What one environment reserves of the budget, as a call of that environment sees it.
     */
    public final class Account {
        private final String environment;

        private Account(String environment) {
            this.environment = environment;
        }

        /** Reserves {@code bytes}; null when reserved, else why not (and nothing is reserved). */
        public @Nullable Refusal tryReserve(long bytes) {
            return EnvironmentBytes.this.tryReserve(environment, bytes);
        }

        /** Counts {@code bytes} against the environment's share alone ({@link EnvironmentBytes#count}). */
        public void count(long bytes) {
            EnvironmentBytes.this.count(environment, bytes);
        }

        /** Gives back bytes counted through this account. */
        public void uncount(long bytes) {
            EnvironmentBytes.this.uncount(environment, bytes);
        }

        /** Why the environment can take no more now; null if it can. */
        public @Nullable Refusal full() {
            return EnvironmentBytes.this.full(environment);
        }

        /** Gives back bytes reserved through this account. */
        public void release(long bytes) {
            EnvironmentBytes.this.release(environment, bytes);
        }

        /**
         * Why bytes were refused, for a message: "this environment holds 5 of the 8 bytes of unread stdin one
         * environment may hold, of the server's 16" or "the server holds 15 of its 16 bytes of unread stdin".
         */
        public String explain(Refusal refusal) {
            return switch (refusal) {
                case ENVIRONMENT_SHARE ->
                    "this environment holds " + reserved(environment) + streamed(environment)
                            + " of the " + share + " bytes of " + budget.what() + " one environment may hold, of the"
                            + " server's " + budget.limit();
                case BUDGET ->
                    "the server holds " + budget.used() + " of its " + budget.limit() + " bytes of " + budget.what();
                case SERVER_FULL -> serverFull(environment);
            };
        }
    }
}
