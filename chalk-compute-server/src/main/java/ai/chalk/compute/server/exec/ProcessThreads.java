package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.threads.DaemonThreads;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The threads that running processes use, owned by one server and ended with it: its timers (timeouts, the wait for
 * output after an exit) and the pumps that carry output to clients, which block on pipes and on slow clients and so
 * get threads of their own; and how many commands may hold them at once.
 *
 * @param timers   the server's timers
 * @param pumps    the output pumps
 * @param commands the commands running, counted against the server's limit
 */
public record ProcessThreads(ScheduledExecutorService timers, ExecutorService pumps, RunningCommands commands) {

    /**
     * Pumps of their own, next to the server's {@code timers}, for at most {@code maxRunningCommands} commands at
     * once; {@link #close} ends them.
     */
    public static ProcessThreads create(ScheduledExecutorService timers, int maxRunningCommands) {
        return new ProcessThreads(
                timers,
                Executors.newCachedThreadPool(DaemonThreads.numbered("chalk-exec-pump")),
                new RunningCommands(maxRunningCommands));
    }

    /** Lets the pumps finish what they carry and ends them (the timers are the server's to end). */
    public void close() {
        pumps.shutdown();
    }
}
