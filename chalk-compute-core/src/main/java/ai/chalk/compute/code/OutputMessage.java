package ai.chalk.compute.code;

import java.time.Instant;

/**
 * One line a snippet wrote, handed to a {@link RunOptions#onStdout} or {@link RunOptions#onStderr} callback as it
 * comes.
 *
 * @param line      the line without its line break (the last piece of output may have none)
 * @param timestamp when the client received it
 * @param error     whether it came on stderr
 */
public record OutputMessage(String line, Instant timestamp, boolean error) {}
