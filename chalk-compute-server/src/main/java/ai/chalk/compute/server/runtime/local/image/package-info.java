/**
 * Root filesystems of local sandboxes: images exported from the Docker engine or read from OCI layouts, unpacked
 * into a cache without ever following a link out of it, and the layers the local image builder adds on top.
 */
@NullMarked
package ai.chalk.compute.server.runtime.local.image;

import org.jspecify.annotations.NullMarked;
