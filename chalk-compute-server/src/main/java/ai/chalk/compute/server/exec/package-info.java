/**
 * Running processes in sandboxes for the exec RPCs: output pumping with backpressure, stdin,
 * signals, terminal resizes and timeouts that kill the whole process tree; and the server-wide
 * byte budgets that bound what clients can make the server hold in memory for them.
 */
@NullMarked
package ai.chalk.compute.server.exec;

import org.jspecify.annotations.NullMarked;
