package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.error.ComputeException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * How many commands clients run at once (execs, one-shot commands, sessions, Python snippets), server-wide and per
 * environment. A running command holds server threads for as long as it runs (one per output it pumps to its client,
 * one writing its stdin, the JDK's wait for its exit; a snippet, one while it waits its turn and runs), which no limit
 * of its sandbox counts: a sandbox's process limit only bounds the commands of one
 * sandbox, so a tenant starting {@code sleep} in each of its sandboxes could make the server start threads until it
 * had no memory left for anyone. One environment runs at most half of the server's limit, so that a tenant at its share
 * holds back only its own commands.
 */
public final class RunningCommands {

    /**
     * The default limit. A running command holds three threads (four once it has had stdin): at most about 4,000
     * threads, a few hundred MB of stacks; a command whose output is quiet reads it into 8 KiB buffers.
     */
    public static final int DEFAULT_LIMIT = 1024;

    private final int limit;
    private final int share;
    private int running;
    /** Commands running per environment; an environment running none has no entry. */
    private final Map<String, Integer> byEnvironment = new HashMap<>();

    /** @param limit the most commands running at once, server-wide (at least 2: one environment runs half) */
    public RunningCommands(int limit) {
        if (limit < 2) {
            throw new IllegalArgumentException("the limit on running commands must be at least 2, not " + limit);
        }
        this.limit = limit;
        this.share = limit / 2;
    }

    /**
     * A place for one more command of {@code environment}, given back by {@link Place#close()} once the command has
     * ended (or did not start).
     *
     * @throws ComputeException (RESOURCE_EXHAUSTED) when the environment runs its share already, or the server its
     *     limit; the message says which and what to do
     */
    public synchronized Place take(String environment) {
        int mine = byEnvironment.getOrDefault(environment, 0);
        if (mine >= share) {
            throw ComputeException.exhausted("this environment runs " + mine + " commands at once, the most one"
                    + " environment may (half of the " + limit + " the server runs; each running command holds server"
                    + " threads): wait for one to end, or end one, before starting another");
        }
        if (running >= limit) {
            throw ComputeException.exhausted("the server runs " + running + " commands at once, its limit (each"
                    + " running command holds server threads): try again once one has ended");
        }
        running++;
        byEnvironment.put(environment, mine + 1);
        return new Place(environment);
    }

    /** Commands running now, server-wide. */
    public synchronized int running() {
        return running;
    }

    private synchronized void give(String environment) {
        running--;
        int left = byEnvironment.getOrDefault(environment, 0) - 1;
        if (left <= 0) {
            byEnvironment.remove(environment);
        } else {
            byEnvironment.put(environment, left);
        }
    }

    /** One command's place; closing it more than once gives it back once. */
    public final class Place implements AutoCloseable {
        private final String environment;
        private final AtomicBoolean given = new AtomicBoolean();

        private Place(String environment) {
            this.environment = environment;
        }

        @Override
        public void close() {
            if (given.compareAndSet(false, true)) {
                give(environment);
            }
        }
    }
}
