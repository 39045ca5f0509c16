/**
 * The docker runtime: sandboxes as containers of a Docker Engine (Docker, Podman, Colima) through its API,
 * exec with stdin, signals and PTYs over the Engine's attach stream, pause/unpause and filesystem snapshots.
 */
package ai.chalk.compute.server.runtime.docker;
