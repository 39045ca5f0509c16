package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.runtime.OutputLines;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a worker process writes (stdout and stderr): every line goes to the server's log at INFO, named after the
 * function that wrote it (or the functions the replica serves, for a line written outside calls) and the replica, and
 * to the functions' recent logs ({@link FunctionLogs}); the last lines are also kept to explain why a worker failed.
 */
final class WorkerOutput {

    private static final Logger log = LoggerFactory.getLogger(WorkerOutput.class);
    private static final int KEPT = 20;
    private final Deque<String> lines = new ArrayDeque<>();
    private final String workerId;
    private final String environment;
    private final List<String> served;
    private final String servedLabel;
    private final FunctionLogs logs;
    private final ServerLogRate serverLog;

    /**
     * @param environment the environment of the functions the replica serves
     * @param served      the names of those functions
     * @param logs        where the functions' recent lines are kept
     */
    WorkerOutput(String workerId, String environment, List<String> served, FunctionLogs logs) {
        this.workerId = workerId;
        this.environment = environment;
        this.served = List.copyOf(served);
        this.servedLabel = String.join(",", served);
        this.logs = logs;
        this.serverLog = logs.serverLogRate(environment);
    }

    /** Reads {@code in}, the worker's {@code stream} ({@code stdout} or {@code stderr}), on {@code executor}. */
    void follow(InputStream in, String stream, Executor executor) {
        executor.execute(() -> {
            try {
                // bounded per line: a worker writing without a line break no longer fills the server's heap
                OutputLines.forEach(in, FunctionLogs.MAX_LINE_CHARS + FunctionLogs.TAG_PREFIX.length() + 256, line -> {
                    FunctionLogs.Line kept =
                            logs.add(environment, served, workerId, stream, FunctionLogs.Tagged.of(line));
                    String function = kept.function().orElse(servedLabel);
                    long unlogged = serverLog.take();
                    if (unlogged > 0) {
                        log.info(
                                "[{} {}] {} lines of environment {}'s functions not written to this log (more than {}"
                                        + " a second between them); the functions' logs keep their last {} each",
                                function,
                                workerId,
                                unlogged,
                                environment,
                                ServerLogRate.LINES_PER_SECOND,
                                FunctionLogs.LINES_PER_FUNCTION);
                    }
                    if (unlogged >= 0) {
                        log.info("[{} {}] {}", function, workerId, kept.text());
                    }
                    add(kept.text().length() > 500 ? kept.text().substring(0, 500) + "..." : kept.text());
                });
            } catch (IOException e) {
                // the process is gone
            }
            long unlogged = serverLog.takeSkipped();
            if (unlogged > 0) {
                log.info(
                        "[{} {}] {} lines of environment {}'s functions not written to this log before this {} ended"
                                + " (more than {} a second between them)",
                        servedLabel,
                        workerId,
                        unlogged,
                        environment,
                        stream,
                        ServerLogRate.LINES_PER_SECOND);
            }
        });
    }

    private synchronized void add(String line) {
        if (lines.size() == KEPT) {
            lines.removeFirst();
        }
        lines.addLast(line);
    }

    /** The kept lines, joined; "(no output)" when there are none. */
    synchronized String tail() {
        return lines.isEmpty() ? "(no output)" : String.join("\n", lines);
    }
}
