package ai.chalk.compute.function.deploy;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * One line a deployed function's replica wrote to its console ({@code System.out}, {@code System.err}, or a logging
 * framework's console appender), as {@link FunctionDeployer#logs(String)} returns it.
 *
 * @param time     when the server read it
 * @param replica  the replica (worker) that wrote it, as the server's log names it
 * @param function the function whose call wrote it; empty for what the replica wrote outside calls (its start, a
 *                 thread of its own), which belongs to every function it serves
 * @param stream   {@code stdout} or {@code stderr}
 * @param text     the line, without its end of line (cut at 4 KiB)
 */
public record FunctionLogLine(Instant time, String replica, Optional<String> function, String stream, String text) {

    /** Checks for nulls. */
    public FunctionLogLine {
        Objects.requireNonNull(time, "time");
        Objects.requireNonNull(replica, "replica");
        Objects.requireNonNull(function, "function");
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(text, "text");
    }
}
