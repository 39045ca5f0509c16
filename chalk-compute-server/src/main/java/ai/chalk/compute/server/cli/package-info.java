/**
 * The standalone server's command line: {@code java -jar chalk-compute-server.jar --port N --data-dir DIR}.
 * It parses options, starts a {@link ai.chalk.compute.server.ComputeServer}, and stops it cleanly on SIGTERM.
 */
@NullMarked
package ai.chalk.compute.server.cli;

import org.jspecify.annotations.NullMarked;
