package ai.chalk.compute.server.worker;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The last lines a worker process wrote (stdout and stderr), kept to explain why it failed; all go to the log. */
final class WorkerOutput {

    private static final Logger log = LoggerFactory.getLogger(WorkerOutput.class);
    private static final int KEPT = 20;
    private final Deque<String> lines = new ArrayDeque<>();
    private final String workerId;

    WorkerOutput(String workerId) {
        this.workerId = workerId;
    }

    /** Reads {@code in} on {@code executor} until it ends. */
    void follow(InputStream in, Executor executor) {
        executor.execute(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    log.debug("worker {}: {}", workerId, line);
                    add(line.length() > 500 ? line.substring(0, 500) + "..." : line);
                }
            } catch (IOException e) {
                // the process is gone
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
