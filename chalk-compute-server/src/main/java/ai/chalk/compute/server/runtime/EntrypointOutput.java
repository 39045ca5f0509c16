package ai.chalk.compute.server.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.Executor;
import org.slf4j.Logger;

/** Follows a sandbox's entrypoint: no input, its output to the debug log, its end to the info log. */
public final class EntrypointOutput {

    private EntrypointOutput() {}

    /** Closes {@code entrypoint}'s stdin and logs its output (read on {@code executor}) and its end to {@code log}. */
    public static void follow(RuntimeProcess entrypoint, String sandboxId, Executor executor, Logger log) {
        try {
            entrypoint.stdin().close();
        } catch (IOException e) {
            // it is gone already
        }
        drainToLog(entrypoint.stdout(), "stdout", sandboxId, executor, log);
        drainToLog(entrypoint.stderr(), "stderr", sandboxId, executor, log);
        entrypoint.onExit().thenAccept(s -> log.info("Entrypoint of sandbox {} ended: {}", sandboxId, s));
    }

    private static void drainToLog(InputStream in, String name, String id, Executor executor, Logger log) {
        executor.execute(() -> {
            try {
                OutputLines.forEach(
                        in, OutputLines.MAX_CHARS, line -> log.debug("sandbox {} entrypoint {}: {}", id, name, line));
            } catch (IOException e) {
                // the stream ended
            }
        });
    }
}
