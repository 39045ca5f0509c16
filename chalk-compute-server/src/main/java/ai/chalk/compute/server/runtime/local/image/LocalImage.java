package ai.chalk.compute.server.runtime.local.image;

import java.nio.file.Path;
import java.util.List;

/**
 * An image as the local runtime runs it: read-only layer directories, bottom first, under one configuration.
 *
 * @param ref    the reference it was resolved from
 * @param layers host directories, bottom (the base's root filesystem) first; overlay whiteouts in upper ones
 * @param config what processes of its sandboxes start with
 */
public record LocalImage(String ref, List<Path> layers, ImageConfig config) {

    public LocalImage {
        layers = List.copyOf(layers);
    }
}
