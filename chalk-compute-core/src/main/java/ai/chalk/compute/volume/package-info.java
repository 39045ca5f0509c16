/**
 * Volumes: named, persistent storage that sandboxes mount ({@code Sandbox#mountVolume}) and that
 * clients read and write directly, through {@code chalk.volume.v1.VolumeService}.
 */
@NullMarked
package ai.chalk.compute.volume;

import org.jspecify.annotations.NullMarked;
