package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.server.runtime.host.DiskReserve;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Optional;
import java.util.UUID;

/**
 * Resolves the image of a local sandbox to root-filesystem layers on this host:
 * <ul>
 *   <li>{@code chalk-local/<hash>}: an image the local builder built (see {@link LocalImageBuilder});</li>
 *   <li>{@code oci:NAME[:TAG]}: an OCI image layout directory {@code NAME} under the import directory;</li>
 *   <li>{@code oci-archive:NAME[:TAG]}: a tar of such a layout (or a {@code docker save} archive) there;</li>
 *   <li>anything else: an image of the Docker engine, exported with {@code docker save}.</li>
 * </ul>
 * Images are unpacked once into the cache under {@code <images>} (see {@link RootfsCache}) and reused.
 */
public final class LocalImages implements AutoCloseable {

    static final String OCI = "oci:";
    static final String OCI_ARCHIVE = "oci-archive:";

    private final Path dir;
    private final Path importDir;
    private final RootfsCache rootfs;
    private final BuiltImages built;
    private final DockerEngineImages engine;
    private final long diskReserve;

    /**
     * @param dir        the cache, {@code <runtime state>/images}; created if missing, leftovers of interrupted
     *                   unpacks removed (call before any overlay of its layers is mounted)
     * @param importDir  where {@code oci:} and {@code oci-archive:} names are looked up
     * @param dockerHost the Docker engine to export images from; null for {@code DOCKER_HOST} or the default socket
     */
    public LocalImages(Path dir, Path importDir, String dockerHost) throws IOException {
        Files.createDirectories(dir);
        this.dir = dir.toRealPath();
        this.importDir = importDir;
        Path tmp = this.dir.resolve("tmp");
        if (Files.isDirectory(tmp, LinkOption.NOFOLLOW_LINKS)) {
            OverlayMount.unmountAllUnder(tmp);
            try (DirectoryStream<Path> left = Files.newDirectoryStream(tmp)) {
                for (Path p : left) {
                    NoFollowDelete.delete(p);
                }
            }
        }
        this.diskReserve = DiskReserve.of(this.dir);
        this.rootfs = new RootfsCache(this.dir, diskReserve);
        this.built = new BuiltImages(this.dir);
        this.engine = new DockerEngineImages(dockerHost);
    }

    /** The cache directory; overlay mounts name layers relative to its parent. */
    public Path dir() {
        return dir;
    }

    /** Where work in progress goes (unpacks, builds); emptied at start. */
    public Path tmp() {
        return dir.resolve("tmp");
    }

    BuiltImages built() {
        return built;
    }

    /**
     * The layers and configuration of {@code ref}, unpacking it first if needed.
     *
     * @throws ImageSourceException when the image cannot be found or read as asked; the message says why
     * @throws IOException          when unpacking fails
     */
    public LocalImage resolve(String ref) throws IOException {
        String r = ref.trim();
        if (BuiltImages.isRef(r)) {
            return built.find(r)
                    .orElseThrow(() -> new ImageSourceException(
                            "image " + r + " is not (or no longer)" + " on this server: build its image spec again"));
        }
        if (r.startsWith(OCI_ARCHIVE)) {
            return fromLayout(r, r.substring(OCI_ARCHIVE.length()), true);
        }
        if (r.startsWith(OCI)) {
            return fromLayout(r, r.substring(OCI.length()), false);
        }
        String id = engine.idOf(r);
        Optional<LocalImage> hit = rootfs.cached(id, r);
        if (hit.isPresent()) {
            return hit.get();
        }
        return rootfs.get(
                id,
                r,
                () -> {
                    Path archive = tmp().resolve("save-" + id + "-" + UUID.randomUUID() + ".tar");
                    try {
                        engine.save(id, archive, diskReserve);
                        return new SavedArchive(archive);
                    } catch (IOException | RuntimeException e) {
                        Files.deleteIfExists(archive);
                        throw e;
                    }
                },
                null);
    }

    /** Whether {@code ref} is an image the local builder built whose record and layers are all on disk. */
    boolean builtAndPresent(String ref) throws IOException {
        return BuiltImages.isRef(ref) && built.find(ref).isPresent();
    }

    private LocalImage fromLayout(String ref, String nameAndTag, boolean archive) throws IOException {
        String name = nameAndTag;
        Optional<String> tag = Optional.empty();
        int colon = nameAndTag.lastIndexOf(':');
        if (colon >= 0 && nameAndTag.indexOf('/', colon) < 0) {
            name = nameAndTag.substring(0, colon);
            tag = Optional.of(nameAndTag.substring(colon + 1)).filter(t -> !t.isEmpty());
        }
        Path at = inImportDir(ref, name);
        if (archive ? !Files.isRegularFile(at) : !Files.isDirectory(at)) {
            throw new ImageSourceException("image " + ref + ": there is no " + (archive ? "file " : "directory ") + name
                    + " in the server's OCI import directory " + importDir);
        }
        try (Blobs blobs = archive ? new TarBlobs(at) : new DirectoryBlobs(at)) {
            ImageManifest manifest = ImageManifest.read(blobs, tag, "image " + ref);
            Optional<LocalImage> hit = rootfs.cached(manifest.id(), ref);
            if (hit.isPresent()) {
                return hit.get();
            }
            return rootfs.get(manifest.id(), ref, () -> archive ? new TarBlobs(at) : new DirectoryBlobs(at), manifest);
        }
    }

    /** {@code name} under the import directory; a name that climbs out of it (or links out) is refused. */
    private Path inImportDir(String ref, String name) throws IOException {
        if (name.isEmpty()
                || name.startsWith("/")
                || Path.of(name).normalize().startsWith("..")
                || java.util.Arrays.asList(name.split("/")).contains("..")) {
            throw new ImageSourceException("image " + ref + ": the name must be a relative path inside the server's"
                    + " OCI import directory, without \"..\"");
        }
        Path base;
        try {
            base = importDir.toRealPath();
        } catch (IOException e) {
            throw new ImageSourceException("image " + ref + ": the server's OCI import directory " + importDir
                    + " does not exist; put OCI layouts or archives there");
        }
        Path at = base.resolve(name);
        if (!Files.exists(at)) {
            return at;
        }
        Path real = at.toRealPath();
        if (!real.startsWith(base)) {
            throw new ImageSourceException(
                    "image " + ref + ": " + name + " leads out of the server's OCI import" + " directory");
        }
        return real;
    }

    @Override
    public void close() {
        engine.close();
    }

    /** A {@code docker save} archive in the cache's work area, deleted when closed. */
    private static final class SavedArchive implements Blobs {
        private final Path file;
        private final TarBlobs blobs;

        SavedArchive(Path file) throws IOException {
            this.file = file;
            this.blobs = new TarBlobs(file);
        }

        @Override
        public boolean has(String path) {
            return blobs.has(path);
        }

        @Override
        public java.io.InputStream open(String path) throws IOException {
            return blobs.open(path);
        }

        @Override
        public void close() throws IOException {
            try {
                blobs.close();
            } finally {
                Files.deleteIfExists(file);
            }
        }
    }
}
