package ai.chalk.compute.server.runtime.local.image;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Image layers and OCI image layouts written by hand, for the image tests. */
public final class OciFixtures {

    private OciFixtures() {}

    /** A layer tar being written; {@link #bytes()} ends it. */
    public static final class Layer {
        private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        private final TarArchiveOutputStream tar = new TarArchiveOutputStream(buffer);

        public Layer() {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        }

        public Layer dir(String name) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name.endsWith("/") ? name : name + "/");
            e.setMode(040755);
            tar.putArchiveEntry(e);
            tar.closeArchiveEntry();
            return this;
        }

        public Layer file(String name, String content, int mode) throws IOException {
            return file(name, content.getBytes(StandardCharsets.UTF_8), mode);
        }

        public Layer file(String name, byte[] content, int mode) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name);
            e.setMode(0100000 | mode);
            e.setSize(content.length);
            tar.putArchiveEntry(e);
            tar.write(content);
            tar.closeArchiveEntry();
            return this;
        }

        public Layer symlink(String name, String target) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_SYMLINK);
            e.setLinkName(target);
            tar.putArchiveEntry(e);
            tar.closeArchiveEntry();
            return this;
        }

        public Layer hardlink(String name, String target) throws IOException {
            TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_LINK);
            e.setLinkName(target);
            tar.putArchiveEntry(e);
            tar.closeArchiveEntry();
            return this;
        }

        /** The uncompressed tar. */
        public byte[] bytes() throws IOException {
            tar.finish();
            tar.close();
            return buffer.toByteArray();
        }
    }

    public static byte[] gzip(byte[] data) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (OutputStream gz = new GZIPOutputStream(out)) {
            gz.write(data);
        }
        return out.toByteArray();
    }

    /**
     * Writes an OCI image layout at {@code dir}: the layers (tar+gzip when {@code gzipped}), a config with
     * {@code configJson} as its {@code config} object, a manifest, and an index naming it {@code tag}.
     */
    public static void writeLayout(Path dir, List<byte[]> layers, boolean gzipped, String configJson, String tag)
            throws IOException {
        Path blobs = Files.createDirectories(dir.resolve("blobs/sha256"));
        Files.writeString(dir.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
        List<String> layerDescs = new ArrayList<>();
        List<String> diffIds = new ArrayList<>();
        for (byte[] l : layers) {
            byte[] blob = gzipped ? gzip(l) : l;
            String digest = put(blobs, blob);
            diffIds.add("\"sha256:" + sha256(l) + "\"");
            layerDescs.add("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar" + (gzipped ? "+gzip" : "")
                    + "\",\"digest\":\"sha256:" + digest + "\",\"size\":" + blob.length + "}");
        }
        byte[] config = ("{\"architecture\":\"" + ImageManifest.hostArchitecture() + "\",\"os\":\"linux\","
                        + "\"config\":" + configJson + ",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":["
                        + String.join(",", diffIds) + "]}}")
                .getBytes(StandardCharsets.UTF_8);
        String configDigest = put(blobs, config);
        byte[] manifest = ("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                        + "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:"
                        + configDigest + "\",\"size\":" + config.length + "},\"layers\":["
                        + String.join(",", layerDescs)
                        + "]}")
                .getBytes(StandardCharsets.UTF_8);
        String manifestDigest = put(blobs, manifest);
        Files.writeString(
                dir.resolve("index.json"),
                "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
                        + "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:" + manifestDigest
                        + "\",\"size\":" + manifest.length
                        + ",\"annotations\":{\"org.opencontainers.image.ref.name\":\""
                        + tag + "\"}}]}");
    }

    /** Tars the layout at {@code dir} into {@code archive} (an oci-archive). */
    public static void writeArchive(Path dir, Path archive) throws IOException {
        Layer tar = new Layer();
        List<Path> files;
        try (var walk = Files.walk(dir)) {
            files = walk.filter(Files::isRegularFile).sorted().toList();
        }
        for (Path f : files) {
            tar.file(dir.relativize(f).toString(), Files.readAllBytes(f), 0644);
        }
        Files.write(archive, tar.bytes());
    }

    private static String put(Path blobs, byte[] blob) throws IOException {
        String digest = sha256(blob);
        Files.write(blobs.resolve(digest), blob);
        return digest;
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
