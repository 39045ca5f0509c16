/**
 * Sandboxes: create, list, get and terminate them through a {@link ai.chalk.compute.sandbox.SandboxClient},
 * and run commands in them — collected, streamed with backpressure, or interactively with stdin and signals.
 */
@NullMarked
package ai.chalk.compute.sandbox;

import org.jspecify.annotations.NullMarked;
