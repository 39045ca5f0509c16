/**
 * Sandboxes: create, list, get, suspend, snapshot and terminate them through a
 * {@link ai.chalk.compute.sandbox.SandboxClient}, and run commands in them — collected, streamed with backpressure,
 * interactively with stdin and signals, or as resumable sessions that other processes re-attach to.
 */
@NullMarked
package ai.chalk.compute.sandbox;

import org.jspecify.annotations.NullMarked;
