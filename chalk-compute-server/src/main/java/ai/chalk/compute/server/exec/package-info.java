/**
 * Running processes in sandboxes for the exec RPCs: output pumping with backpressure, stdin,
 * signals, terminal resizes and timeouts that kill the whole process tree.
 */
package ai.chalk.compute.server.exec;
