package ai.chalk.compute.image;

import java.time.Instant;

/**
 * One line of an image build's output.
 *
 * @param timestamp when the server logged it
 * @param severity  {@code INFO} for build output, {@code ERROR} for the explanation of a failure
 * @param message   the line
 */
public record BuildLogLine(Instant timestamp, String severity, String message) {}
