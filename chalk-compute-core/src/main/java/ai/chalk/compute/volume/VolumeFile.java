package ai.chalk.compute.volume;

import java.time.Instant;

/**
 * A file in a volume.
 *
 * @param path      its path inside the volume, with '/' separators and no leading slash
 * @param size      its size in bytes
 * @param updatedAt when it last changed
 */
public record VolumeFile(String path, long size, Instant updatedAt) {}
