package ai.chalk.compute.server.runtime.local.image;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The images the local builder produced, as records {@code <images>/built/<hash>.json}: the layer directories
 * (relative to {@code <images>}, bottom first) and the configuration. Their reference is
 * {@value #PREFIX}{@code <hash>}, the hash being the spec's content hash.
 */
final class BuiltImages {

    static final String PREFIX = "chalk-local/";
    private static final Pattern HASH = Pattern.compile("[0-9a-f]{64}");

    private final Path imagesDir;
    private final Path dir;

    BuiltImages(Path imagesDir) throws IOException {
        this.imagesDir = imagesDir;
        this.dir = imagesDir.resolve("built");
        Files.createDirectories(dir);
    }

    static boolean isRef(String ref) {
        return ref.startsWith(PREFIX);
    }

    static String ref(String hash) {
        return PREFIX + hash;
    }

    /** Records an image (atomically: a reader sees the old record or the new one). */
    void record(String hash, List<Path> layers, ImageConfig config) throws IOException {
        ObjectNode o = ImageManifest.JSON.createObjectNode();
        ArrayNode l = o.putArray("layers");
        for (Path p : layers) {
            l.add(imagesDir.relativize(p).toString());
        }
        o.set("config", config.toJson());
        Path tmp = dir.resolve(hash + ".json.tmp");
        Files.write(tmp, ImageManifest.JSON.writeValueAsBytes(o));
        Files.move(
                tmp, dir.resolve(hash + ".json"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * The image a {@value #PREFIX} reference names, if its record and every layer are on disk.
     *
     * @throws ImageSourceException when the reference is malformed
     */
    Optional<LocalImage> find(String ref) throws IOException {
        String hash = ref.substring(PREFIX.length());
        if (!HASH.matcher(hash).matches()) {
            throw new ImageSourceException(
                    "\"" + ref + "\" is not an image reference of the local builder (" + PREFIX + "<64 hex digits>)");
        }
        Path record = dir.resolve(hash + ".json");
        if (!Files.isRegularFile(record, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        JsonNode o = ImageManifest.JSON.readTree(Files.readAllBytes(record));
        List<Path> layers = new ArrayList<>();
        for (JsonNode l : o.path("layers")) {
            Path p = imagesDir.resolve(l.asText()).normalize();
            if (!p.startsWith(imagesDir) || !Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                return Optional.empty();
            }
            layers.add(p);
        }
        return Optional.of(new LocalImage(ref, layers, ImageConfig.fromConfigJson(o.path("config"))));
    }
}
