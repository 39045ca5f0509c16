/**
 * Sandboxes on the server: their lifecycle (create, list, terminate, lifetime, restart recovery)
 * and the {@code chalk.sandbox.v1.SandboxService} that exposes it.
 */
package ai.chalk.compute.server.sandbox;
