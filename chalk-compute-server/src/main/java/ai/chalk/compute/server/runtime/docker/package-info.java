/**
 * The docker runtime: sandboxes as containers of a Docker Engine (Docker, Podman, Colima) through its API,
 * exec with stdin, signals and PTYs over the Engine's attach stream, pause/unpause and filesystem snapshots; image
 * builds and networked sandboxes kept off the host's network, volumes nosuid, containers bounded in lifetime.
 */
@NullMarked
package ai.chalk.compute.server.runtime.docker;

import org.jspecify.annotations.NullMarked;
