package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Paths inside an image being built: an {@code add_file} destination or a {@code uv_sync} workdir, relative ones
 * resolved against the spec's workdir (or {@code /}), normalised, and never above the image's root.
 */
public final class ImagePaths {

    private ImagePaths() {}

    /** The directory relative paths of a spec are resolved against: its workdir, else {@code /}. */
    public static String base(ImageSpec spec) {
        return spec.hasWorkdir() && !spec.getWorkdir().isBlank() ? spec.getWorkdir() : "/";
    }

    /**
     * {@code path} as an absolute, normalised path in the image.
     *
     * @throws IllegalArgumentException saying why when it leads above the image's root ({@code ..} too far)
     */
    public static String resolve(String base, String path) {
        String joined = path.startsWith("/") ? path : base + "/" + path;
        Deque<String> parts = new ArrayDeque<>();
        for (String part : joined.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (parts.isEmpty()) {
                    throw new IllegalArgumentException("\"" + path + "\" leads above the image's root directory");
                }
                parts.removeLast();
            } else {
                parts.addLast(part);
            }
        }
        return "/" + String.join("/", parts);
    }
}
