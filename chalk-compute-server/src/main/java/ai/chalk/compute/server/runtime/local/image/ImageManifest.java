package ai.chalk.compute.server.runtime.local.image;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Which config and layers make up an image of a layout or archive: an OCI layout ({@code index.json}, then the
 * manifest, possibly through an image index per platform) or a {@code docker save} archive ({@code manifest.json}).
 *
 * @param id     the image id: hex SHA-256 of its configuration blob, as Docker names images
 * @param config the configuration's {@code config}
 * @param layers the layers, bottom first
 */
record ImageManifest(String id, ImageConfig config, List<Layer> layers) {

    static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern DIGEST = Pattern.compile("sha256:[0-9a-f]{64}");
    private static final String REF_NAME = "org.opencontainers.image.ref.name";

    /**
     * One layer blob.
     *
     * @param path      its path in the layout
     * @param mediaType its media type, empty when the layout does not say (docker archives: sniffed)
     * @param digest    the digest its bytes must have, empty when unknown
     */
    record Layer(String path, String mediaType, Optional<String> digest) {}

    /**
     * Reads the image named {@code tag} (empty: the only one) from {@code blobs}.
     *
     * @throws ImageSourceException naming what is missing or ambiguous
     */
    static ImageManifest read(Blobs blobs, Optional<String> tag, String what) throws IOException {
        if (blobs.has("index.json")) {
            return fromOci(blobs, tag, what);
        }
        if (blobs.has("manifest.json")) {
            return fromDockerArchive(blobs, tag, what);
        }
        throw new ImageSourceException(what + " is neither an OCI image layout (no index.json) nor a docker save"
                + " archive (no manifest.json)");
    }

    private static ImageManifest fromOci(Blobs blobs, Optional<String> tag, String what) throws IOException {
        JsonNode index = json(blobs, "index.json");
        JsonNode chosen = choose(index.path("manifests"), tag, what);
        for (int depth = 0; isIndex(chosen.path("mediaType").asText()); depth++) {
            if (depth > 4) {
                throw new ImageSourceException(what + ": image indexes nest too deeply");
            }
            chosen = platform(json(blobs, blobPath(chosen, what)).path("manifests"), what);
        }
        JsonNode manifest = json(blobs, blobPath(chosen, what));
        JsonNode configDesc = manifest.path("config");
        byte[] configBytes = read(blobs, blobPath(configDesc, what));
        String id = sha256(configBytes);
        if (!configDesc.path("digest").asText().equals("sha256:" + id)) {
            throw new ImageSourceException(what + ": the image configuration does not match its digest "
                    + configDesc.path("digest").asText());
        }
        List<Layer> layers = new ArrayList<>();
        for (JsonNode l : manifest.path("layers")) {
            layers.add(new Layer(
                    blobPath(l, what),
                    l.path("mediaType").asText(""),
                    Optional.of(l.path("digest").asText())));
        }
        return new ImageManifest(id, ImageConfig.fromImageJson(JSON.readTree(configBytes)), layers);
    }

    private static ImageManifest fromDockerArchive(Blobs blobs, Optional<String> tag, String what) throws IOException {
        JsonNode all = json(blobs, "manifest.json");
        JsonNode chosen = null;
        List<String> names = new ArrayList<>();
        for (JsonNode m : all) {
            for (JsonNode t : m.path("RepoTags")) {
                names.add(t.asText());
                if (tag.isPresent()
                        && (t.asText().equals(tag.get()) || t.asText().endsWith(":" + tag.get()))) {
                    chosen = m;
                }
            }
        }
        if (chosen == null) {
            if (all.size() == 1 && tag.isEmpty()) {
                chosen = all.get(0);
            } else {
                throw new ImageSourceException(what + " holds " + all.size() + " images (" + String.join(", ", names)
                        + "); " + (tag.isPresent() ? "none is tagged " + tag.get() : "name one with :TAG"));
            }
        }
        byte[] configBytes = read(blobs, chosen.path("Config").asText());
        List<Layer> layers = new ArrayList<>();
        for (JsonNode l : chosen.path("Layers")) {
            layers.add(new Layer(l.asText(), "", Optional.empty()));
        }
        return new ImageManifest(sha256(configBytes), ImageConfig.fromImageJson(JSON.readTree(configBytes)), layers);
    }

    private static JsonNode choose(JsonNode manifests, Optional<String> tag, String what) throws IOException {
        List<String> tags = new ArrayList<>();
        for (JsonNode m : manifests) {
            String name = m.path("annotations").path(REF_NAME).asText("");
            tags.add(name);
            if (tag.isPresent() && name.equals(tag.get())) {
                return m;
            }
        }
        if (tag.isEmpty() && manifests.size() == 1) {
            return manifests.get(0);
        }
        if (manifests.isEmpty()) {
            throw new ImageSourceException(what + ": index.json lists no image");
        }
        throw new ImageSourceException(what + " holds " + manifests.size() + " images tagged " + tags + "; "
                + (tag.isPresent() ? "none is tagged " + tag.get() : "name one with :TAG"));
    }

    /** The manifest of an image index for this machine's platform. */
    private static JsonNode platform(JsonNode manifests, String what) throws IOException {
        String arch = hostArchitecture();
        List<String> seen = new ArrayList<>();
        for (JsonNode m : manifests) {
            JsonNode p = m.path("platform");
            seen.add(p.path("os").asText() + "/" + p.path("architecture").asText());
            if (p.path("os").asText("linux").equals("linux")
                    && p.path("architecture").asText().equals(arch)) {
                return m;
            }
        }
        throw new ImageSourceException(what + " has no image for linux/" + arch + " (it has " + seen + ")");
    }

    static String hostArchitecture() {
        String a = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        return switch (a) {
            case "amd64", "x86_64" -> "amd64";
            case "aarch64", "arm64" -> "arm64";
            default -> a;
        };
    }

    private static boolean isIndex(String mediaType) {
        return mediaType.equals("application/vnd.oci.image.index.v1+json")
                || mediaType.equals("application/vnd.docker.distribution.manifest.list.v2+json");
    }

    private static String blobPath(JsonNode descriptor, String what) throws IOException {
        String digest = descriptor.path("digest").asText("");
        if (!DIGEST.matcher(digest).matches()) {
            throw new ImageSourceException(
                    what + ": unsupported or malformed digest \"" + digest + "\" (only sha256 is read)");
        }
        return "blobs/sha256/" + digest.substring("sha256:".length());
    }

    private static JsonNode json(Blobs blobs, String path) throws IOException {
        return JSON.readTree(read(blobs, path));
    }

    private static byte[] read(Blobs blobs, String path) throws IOException {
        if (!blobs.has(path)) {
            throw new ImageSourceException("the image has no " + path);
        }
        try (InputStream in = blobs.open(path)) {
            byte[] b = in.readNBytes(16 * 1024 * 1024 + 1);
            if (b.length > 16 * 1024 * 1024) {
                throw new ImageSourceException(path + " is larger than 16 MiB: not an image manifest or config");
            }
            return b;
        }
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
