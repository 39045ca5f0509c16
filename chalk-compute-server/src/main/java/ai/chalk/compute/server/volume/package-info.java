/**
 * Persistent volumes: directories under the data directory, named within their environment, that sandboxes mount
 * and clients read and write through {@code chalk.volume.v1.VolumeService}, with paths kept inside them.
 */
@NullMarked
package ai.chalk.compute.server.volume;

import org.jspecify.annotations.NullMarked;
