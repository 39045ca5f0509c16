package ai.chalk.compute.server.worker;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.runtime.host.DiskReserve;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * Code snapshots materialised once per code digest under {@code <dir>/<hex>/}: jars as files (hard links to their
 * blobs where possible), directory zips
 * extracted into a directory of the entry's name, within bounds ({@link DirectoryZip}). A snapshot is built in a temporary directory and renamed into
 * place, so a half-written one is never used.
 */
public final class CodeSnapshots {

    private final BlobStore blobs;
    private final Path dir;
    private final long diskReserve;
    /** A lock per digest being unpacked, for as long as a caller wants it. */
    private final ConcurrentHashMap<String, Object> unpacking = new ConcurrentHashMap<>();

    /** Snapshots under {@code dir}, keeping the disk's default reserve free ({@link DiskReserve}). */
    public CodeSnapshots(BlobStore blobs, Path dir) throws IOException {
        this(blobs, dir, -1);
    }

    /** Snapshots whose unpacking keeps {@code diskReserve} bytes of the disk free; -1 for the default. */
    public CodeSnapshots(BlobStore blobs, Path dir, long diskReserve) throws IOException {
        this.blobs = blobs;
        this.dir = dir;
        Files.createDirectories(dir);
        this.diskReserve = diskReserve < 0 ? DiskReserve.of(dir) : diskReserve;
        // what a run that died while unpacking left (snapshots are renamed into place only once whole)
        try (Stream<Path> leftovers = Files.list(dir)) {
            leftovers
                    .filter(p -> p.getFileName().toString().startsWith(".tmp-"))
                    .forEach(CodeSnapshots::deleteTree);
        }
    }

    /**
     * A materialised snapshot.
     *
     * @param dir       its directory on the host
     * @param classPath the class path inside a sandbox where {@code dir} is bound at {@code mountPath}
     */
    public record Snapshot(Path dir, List<String> classPath) {}

    /** A manifest's size, at most: a list of at most {@link CodeManifest#MAX_ENTRIES} class path entries. */
    static final long MAX_MANIFEST_BYTES = 1L << 20;

    /** The manifest blob's contents, parsed; FAILED_PRECONDITION when it is larger than a manifest can be. */
    public CodeManifest manifest(BlobDigest digest) throws IOException {
        long size = blobs.size(digest).orElse(0);
        if (size > MAX_MANIFEST_BYTES) {
            throw io.grpc.Status.FAILED_PRECONDITION
                    .withDescription("code " + digest + " is " + size + " bytes, more than a manifest may be ("
                            + MAX_MANIFEST_BYTES + ")")
                    .asRuntimeException();
        }
        return CodeManifest.parse(digest, Files.readAllBytes(blobs.path(digest)));
    }

    /** The digests among the manifest and its entries that the blob store lacks. */
    public List<BlobDigest> missing(BlobDigest manifestDigest) throws IOException {
        return missing(manifestDigest, digest -> true);
    }

    /**
     * The digests among the manifest and its entries that the blob store lacks or that {@code uploaded} says the
     * deployer has not uploaded itself (bytes another environment uploaded are not the deployer's to use).
     */
    public List<BlobDigest> missing(BlobDigest manifestDigest, Predicate<BlobDigest> uploaded) throws IOException {
        if (blobs.size(manifestDigest).isEmpty() || !uploaded.test(manifestDigest)) {
            return List.of(manifestDigest);
        }
        java.util.Set<BlobDigest> out = new java.util.LinkedHashSet<>();
        for (CodeManifest.Entry e : manifest(manifestDigest).entries()) {
            if (!out.contains(e.digest()) && (!blobs.contains(e.digest(), e.size()) || !uploaded.test(e.digest()))) {
                out.add(e.digest());
            }
        }
        return List.copyOf(out);
    }

    /**
     * The snapshot of a code digest, materialising it on first use. Callers of one digest wait for the one unpacking
     * it; other digests unpack meanwhile. (One lock for every digest let one tenant's long unpack hold every other
     * tenant's deploys and replica starts.)
     */
    public Snapshot materialise(BlobDigest manifestDigest, String mountPath) throws IOException {
        CodeManifest manifest = manifest(manifestDigest);
        Path target = dir.resolve(manifestDigest.hex());
        if (!Files.isDirectory(target)) {
            Object lock = unpacking.computeIfAbsent(manifestDigest.hex(), hex -> new Object());
            try {
                synchronized (lock) {
                    if (!Files.isDirectory(target)) {
                        unpack(manifest, target);
                    }
                }
            } finally {
                unpacking.remove(manifestDigest.hex(), lock);
            }
        }
        List<String> cp =
                manifest.entries().stream().map(e -> mountPath + "/" + e.name()).toList();
        return new Snapshot(target, cp);
    }

    /** Unpacks a snapshot into a directory of its own, renamed to {@code target} once whole. */
    private void unpack(CodeManifest manifest, Path target) throws IOException {
        Path temp = dir.resolve(".tmp-" + UUID.randomUUID());
        Files.createDirectories(temp);
        try {
            DirectoryZip zips = new DirectoryZip(diskReserve); // one budget for all of the snapshot's zips
            for (CodeManifest.Entry e : manifest.entries()) {
                Path out = temp.resolve(e.name());
                if (e.isDir()) {
                    try (InputStream in = blobs.open(e.digest())) {
                        zips.extract(in, out, e.name() + " (" + e.digest() + ")");
                    } catch (IllegalArgumentException bad) {
                        // a name that is not UTF-8 (ZipInputStream's "MALFORMED"), or holds a NUL
                        throw new IOException("code entry " + e.name() + " (" + e.digest() + ") is not a zip"
                                + " this server can unpack: " + bad.getMessage());
                    }
                } else {
                    linkOrCopy(blobs.path(e.digest()), out);
                }
            }
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileSystemException raced) { // rename(2)'s ENOTEMPTY is no subclass of its own
                // another caller's unpack of the same digest came first (its lock had gone): the same bytes
                if (!Files.isDirectory(target)) {
                    throw raced;
                }
            }
        } catch (IOException e) {
            // where the server keeps its data is the operator's business, not the deployer's
            throw new IOException(String.valueOf(e.getMessage()).replace(dir.toString(), "<code-dir>"), e);
        } finally {
            deleteTree(temp);
        }
    }

    /** A jar is the blob's bytes: a hard link when the file system allows, else a copy. */
    private static void linkOrCopy(Path blob, Path out) throws IOException {
        try {
            Files.createLink(out, blob);
        } catch (IOException | UnsupportedOperationException e) {
            Files.copy(blob, out);
        }
    }

    private static void deleteTree(Path p) {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            walk.sorted(Comparator.reverseOrder()).forEach(f -> {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            // a leftover temporary directory is harmless: it is never used
        }
    }
}
