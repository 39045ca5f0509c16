package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.zip.GZIPInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Images unpacked into flattened root filesystems, one per image id: {@code <images>/rootfs/<id>/fs} and its
 * configuration in {@code <images>/rootfs/<id>/config.json}. An entry is unpacked into {@code <images>/tmp} and
 * renamed into place once complete, so a half-unpacked image is never used (and is removed at the next start);
 * concurrent requests for one id unpack it once; entries stay across sandboxes and server restarts.
 */
final class RootfsCache {

    private static final Logger log = LoggerFactory.getLogger(RootfsCache.class);

    private final Path dir;
    private final Path tmp;
    private final long diskReserve;
    private final KeyLocks locks = new KeyLocks();

    /** @param diskReserve the bytes an unpack leaves free on the cache's disk ({@link DiskReservedStream}) */
    RootfsCache(Path imagesDir, long diskReserve) throws IOException {
        this.dir = imagesDir.resolve("rootfs");
        this.tmp = imagesDir.resolve("tmp");
        this.diskReserve = diskReserve;
        Files.createDirectories(dir);
        Files.createDirectories(tmp);
    }

    /** The unpacked image with this id, if the cache has it. */
    Optional<LocalImage> cached(String id, String ref) throws IOException {
        Path entry = dir.resolve(id);
        Path config = entry.resolve("config.json");
        if (!Files.isRegularFile(config, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        ImageConfig c = ImageConfig.fromConfigJson(ImageManifest.JSON.readTree(Files.readAllBytes(config)));
        return Optional.of(new LocalImage(ref, List.of(entry.resolve("fs")), c));
    }

    /** Opens the image's blobs only when they are needed (exporting from the engine takes a while). */
    interface BlobsOpener {
        Blobs open() throws IOException;
    }

    /**
     * The image with this id, unpacked unless the cache has it already.
     *
     * @param known its manifest if already read, else null: it is read from the blobs (a {@code docker save}
     *              archive of that one image)
     */
    LocalImage get(String id, String ref, BlobsOpener opener, ImageManifest known) throws IOException {
        synchronized (locks.of(id)) {
            Optional<LocalImage> hit = cached(id, ref);
            if (hit.isPresent()) {
                return hit.get();
            }
            Path work = tmp.resolve("rootfs-" + id + "-" + UUID.randomUUID());
            try {
                Files.createDirectory(work);
                Path fs = work.resolve("fs");
                Files.createDirectory(fs);
                Files.setPosixFilePermissions(fs, PosixFilePermissions.fromString("rwxr-xr-x"));
                long start = System.nanoTime();
                ImageManifest manifest = known;
                try (Blobs blobs = opener.open()) {
                    if (manifest == null) {
                        manifest = ImageManifest.read(blobs, Optional.empty(), ref);
                    }
                    LayerExtractor extractor = new LayerExtractor(fs);
                    for (ImageManifest.Layer layer : manifest.layers()) {
                        applyLayer(extractor, blobs, layer, ref, tmp, diskReserve);
                    }
                }
                Files.write(
                        work.resolve("config.json"),
                        ImageManifest.JSON.writeValueAsBytes(manifest.config().toJson()));
                Files.move(work, dir.resolve(id), StandardCopyOption.ATOMIC_MOVE);
                log.info(
                        "Unpacked image {} ({} layers, id {}) in {} ms",
                        ref,
                        manifest.layers().size(),
                        id.substring(0, 12),
                        (System.nanoTime() - start) / 1_000_000);
            } finally {
                NoFollowDelete.delete(work);
            }
            return cached(id, ref).orElseThrow(() -> new IOException("the unpacked image " + id + " vanished"));
        }
    }

    private static void applyLayer(
            LayerExtractor extractor, Blobs blobs, ImageManifest.Layer layer, String ref, Path disk, long reserve)
            throws IOException {
        String mediaType = layer.mediaType();
        String what = "layer " + layer.path() + " of " + ref;
        if (mediaType.contains("zstd")) {
            throw new ImageSourceException(what + " is zstd-compressed (" + mediaType + "); the local runtime"
                    + " unpacks uncompressed and gzip layers: export the image with gzip or without compression");
        }
        if (!mediaType.isEmpty() && !mediaType.contains("tar")) {
            throw new ImageSourceException(what + " has media type " + mediaType + ", which is not a filesystem"
                    + " layer the local runtime can unpack (tar or tar+gzip)");
        }
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        try (InputStream raw = new DigestInputStream(blobs.open(layer.path()), sha);
                BufferedInputStream in = new BufferedInputStream(raw, 64 * 1024)) {
            in.mark(8);
            byte[] magic = in.readNBytes(6);
            in.reset();
            InputStream tar;
            if (magic.length >= 2 && (magic[0] & 0xff) == 0x1f && (magic[1] & 0xff) == 0x8b) {
                tar = new GZIPInputStream(in, 64 * 1024);
            } else if (magic.length >= 4
                    && (magic[0] & 0xff) == 0x28
                    && (magic[1] & 0xff) == 0xb5
                    && (magic[2] & 0xff) == 0x2f
                    && (magic[3] & 0xff) == 0xfd) {
                throw new ImageSourceException(what + " is zstd-compressed; the local runtime unpacks uncompressed"
                        + " and gzip layers: export the image with gzip or without compression");
            } else if (magic.length >= 3 && magic[0] == 'B' && magic[1] == 'Z' && magic[2] == 'h'
                    || magic.length >= 6 && (magic[0] & 0xff) == 0xfd && magic[1] == '7' && magic[2] == 'z') {
                throw new ImageSourceException(what + " is bzip2- or xz-compressed; the local runtime unpacks"
                        + " uncompressed and gzip layers");
            } else {
                tar = in;
            }
            extractor.apply(new DiskReservedStream(tar, disk, reserve, "unpacking " + what), what);
            in.transferTo(OutputStream.nullOutputStream());
        }
        if (layer.digest().isPresent()) {
            String got = "sha256:" + HexFormat.of().formatHex(sha.digest());
            if (!got.equals(layer.digest().get())) {
                throw new ImageSourceException(what + " is corrupt: its digest is " + got + ", the manifest says "
                        + layer.digest().get());
            }
        }
    }
}
