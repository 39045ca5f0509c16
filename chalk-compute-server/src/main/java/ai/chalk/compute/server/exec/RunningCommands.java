package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.threads.EnvironmentShares;

/**
 * How many commands clients run at once (execs, one-shot commands, sessions, Python snippets), server-wide and per
 * environment. A running command holds server threads for as long as it runs (one per output it pumps to its client,
 * one writing its stdin, the JDK's wait for its exit; a snippet, one while it waits its turn and runs), which no limit
 * of its sandbox counts: a sandbox's process limit only bounds the commands of one sandbox, so a tenant starting
 * {@code sleep} in each of its sandboxes could make the server start threads until it had no memory left for anyone.
 * One environment runs at most half of the server's limit, so that a tenant at its share holds back only its own
 * commands.
 */
public final class RunningCommands {

    /**
     * The default limit. A running command holds three threads (four once it has had stdin): at most about 4,000
     * threads, a few hundred MB of stacks; a command whose output is quiet reads it into 8 KiB buffers.
     */
    public static final int DEFAULT_LIMIT = 1024;

    private final EnvironmentShares places;

    /** @param limit the most commands running at once, server-wide (at least 2: one environment runs half) */
    public RunningCommands(int limit) {
        this.places = new EnvironmentShares("running commands", limit);
    }

    /**
     * A place for one more command of {@code environment}, given back by {@link EnvironmentShares.Place#close()} once the command has
     * ended (or did not start).
     *
     * @throws ComputeException (RESOURCE_EXHAUSTED) when the environment runs its share already, or the server its
     *     limit; the message says which and what to do
     */
    public EnvironmentShares.Place take(String environment) {
        return places.take(environment, RunningCommands::refusal);
    }

    private static String refusal(EnvironmentShares.Refusal refusal, EnvironmentShares places, String environment) {
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment runs " + places.held(environment) + " commands at once, the most one environment"
                        + " may (half of the " + places.limit() + " the server runs; each running command holds server"
                        + " threads): wait for one to end, or end one, before starting another"
                : "the server runs " + places.held() + " commands at once, its limit (each running command holds"
                        + " server threads): try again once one has ended";
    }

    /** Commands running now, server-wide. */
    public int running() {
        return places.held();
    }
}
