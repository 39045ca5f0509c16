/**
 * Sandboxes on the server: their lifecycle (create, list, suspend, resume, terminate, lifetime, restart recovery)
 * and the {@code chalk.sandbox.v1} and {@code chalk.sandbox.v2} SandboxServices that expose it.
 */
@NullMarked
package ai.chalk.compute.server.sandbox;

import org.jspecify.annotations.NullMarked;
