package ai.chalk.compute.server.blob;

import ai.chalk.compute.server.runtime.host.DiskReserve;
import ai.chalk.compute.server.store.BlobOwnerStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * Blobs on disk under {@code <dir>/sha256/<first two hex>/<hex>}, written once: an upload goes to a temporary
 * file, is checked against its digest and size, then renamed into place, so a reader never sees a partial blob
 * and a crash leaves at most a temporary file (removed at the next open).
 */
public final class BlobStore {

    /** How often an upload reads the disk's free space, in bytes written. */
    private static final long DISK_CHECK_BYTES = 16L << 20;

    private final Path root;
    private final Path incoming;
    private final long diskReserve;
    /**
     * Bytes that uploads under way announced and have not written yet (guarded by this): each upload's check of the
     * free space counts them, so that many uploads started at once cannot all pass it against the same free space
     * (512 of 16 MiB each, checked again only after 16 MiB, wrote 8 GiB past the reserve).
     */
    private long promised;
    /** Of {@link #promised}, each owner's (guarded by this); an owner promised nothing has no entry. */
    private final java.util.Map<String, Long> promisedBy = new java.util.HashMap<>();
    /**
     * What each owner's uploads under way announced, until each ends (guarded by this): unlike {@link #promisedBy},
     * not lowered as the bytes arrive, since bytes written and not committed are stored nowhere yet, and uploads held
     * open once written would otherwise each pass the limit's check.
     */
    private final java.util.Map<String, Long> pendingBy = new java.util.HashMap<>();
    /** Each environment's stored blobs, when {@link #limitEach} set a limit. */
    private volatile BlobOwnerStore owners;
    /** The most bytes of blobs one environment may store. */
    private volatile long perEnvironment = Long.MAX_VALUE;
    /**
     * Held while a committed blob is moved into place and recorded as its owner's, and while an unowned blob is
     * deleted: a commit of bytes already present, between finding them and recording them, would otherwise lose them
     * to a deletion that found no owner.
     */
    private final Object placing = new Object();

    /**
     * Opens (creating) a store in {@code dir}, discarding uploads a previous run left unfinished; uploads keep the
     * disk's default reserve free ({@link DiskReserve}).
     */
    public BlobStore(Path dir) throws IOException {
        this(dir, -1);
    }

    /** A store whose uploads keep {@code diskReserve} bytes of the disk free; -1 for the default. */
    public BlobStore(Path dir, long diskReserve) throws IOException {
        this.root = dir.resolve("sha256");
        this.incoming = dir.resolve("incoming");
        Files.createDirectories(root);
        Files.createDirectories(incoming);
        this.diskReserve = diskReserve < 0 ? DiskReserve.of(incoming) : diskReserve;
        try (var leftovers = Files.list(incoming)) {
            for (Path p : (Iterable<Path>) leftovers::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }

    /**
     * Limits each environment's blobs to {@code bytes} in all, counting those it stored (in {@code owners}) and those
     * its uploads under way announced: one tenant's datasets, code and query results could otherwise have filled the
     * disk down to its reserve, after which every tenant's uploads were refused. Blobs a store is asked to write for
     * an owner are recorded in {@code owners} as that environment's.
     */
    public void limitEach(BlobOwnerStore owners, long bytes) {
        this.owners = owners;
        this.perEnvironment = bytes;
    }

    /** The most bytes of blobs one environment may store; {@link Long#MAX_VALUE} when there is no limit. */
    public long limitPerEnvironment() {
        return perEnvironment;
    }

    /** The digests (hex) of every blob present, in no particular order. */
    public List<String> digests() throws IOException {
        try (Stream<Path> files = Files.walk(root, 2)) {
            return files.filter(Files::isRegularFile)
                    .map(p -> p.getFileName().toString())
                    .filter(name -> name.length() == 64)
                    .toList();
        }
    }

    /** Where a blob lives (whether or not it is present). */
    public Path path(BlobDigest digest) {
        return root.resolve(digest.hex().substring(0, 2)).resolve(digest.hex());
    }

    /** The size of a present blob, or empty. */
    public OptionalLong size(BlobDigest digest) {
        try {
            return OptionalLong.of(Files.size(path(digest)));
        } catch (IOException e) {
            return OptionalLong.empty();
        }
    }

    /** When a blob was stored; the epoch when it is not present. */
    public java.time.Instant lastModified(BlobDigest digest) {
        try {
            return Files.getLastModifiedTime(path(digest)).toInstant();
        } catch (IOException e) {
            return java.time.Instant.EPOCH;
        }
    }

    /** Whether the blob is present with this size. */
    public boolean contains(BlobDigest digest, long size) {
        OptionalLong present = size(digest);
        return present.isPresent() && present.getAsLong() == size;
    }

    /**
     * Whether {@code owner} (an environment) stores the blob; if so, it counts as used now, and is not collected for a
     * while ({@link BlobCollection}). A store without owners ({@link #limitEach} never called) collects nothing: true.
     */
    public boolean use(String owner, BlobDigest digest) {
        BlobOwnerStore ledger = owners;
        return ledger == null || ledger.owns(owner, digest.hex());
    }

    /**
     * Deletes a blob that no environment owns ({@link #limitEach}) any more; returns whether it was there. A commit of
     * the same bytes under way waits, then stores them again.
     */
    public boolean deleteUnowned(BlobDigest digest) throws IOException {
        BlobOwnerStore ledger = owners;
        synchronized (placing) {
            if (ledger != null && ledger.ownedByAny(digest.hex())) {
                return false;
            }
            return Files.deleteIfExists(path(digest));
        }
    }

    /** Opens a present blob for reading. */
    public InputStream open(BlobDigest digest) throws IOException {
        return Files.newInputStream(path(digest));
    }

    /** Stores bytes whose digest is computed here; returns it. */
    public BlobDigest put(byte[] bytes) throws IOException {
        Upload upload = begin();
        upload.write(bytes, 0, bytes.length);
        return upload.commitComputed();
    }

    /**
     * Stores a file's bytes under their digest; returns it. A file that would leave the disk with less than its reserve
     * is refused before a byte is copied.
     *
     * @throws DiskFullException saying how much is free and kept
     */
    public BlobDigest put(Path file) throws IOException {
        return put(file, "");
    }

    /**
     * {@link #put(Path)} for {@code owner} (an environment), as {@link #begin(long, String)} counts and records it.
     *
     * @throws DiskFullException saying how much is free and kept, or that the environment's limit would be passed
     */
    public BlobDigest put(Path file, String owner) throws IOException {
        try (Upload upload = begin(Files.size(file), owner);
                InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) >= 0; ) {
                upload.write(buffer, 0, n);
            }
            return upload.commit();
        }
    }

    /** Starts writing a blob of unknown size (checked against the disk's reserve every 16 MiB it writes). */
    public Upload begin() throws IOException {
        return begin(0);
    }

    /**
     * Starts writing a blob of {@code size} announced bytes, refused before any byte is written when they would leave
     * the disk with less than its reserve, counting what other uploads under way announced and have not written yet;
     * the bytes are kept for this upload until written, or until it ends.
     *
     * @throws DiskFullException saying how much is free and kept
     */
    public Upload begin(long size) throws IOException {
        return begin(size, "");
    }

    /**
     * {@link #begin(long)} for {@code owner} (an environment), whose uploads under way may have announced at most half
     * the room above the reserve: an upload that announces its size and then sends nothing keeps that room while its
     * stream lasts, and one tenant's could otherwise have refused every other tenant's uploads. With a limit per
     * environment ({@link #limitEach}), what it stored and what its uploads under way announced count against it, and
     * the blob is recorded as its once committed.
     *
     * @throws DiskFullException saying how much is free and kept, or that the environment's limit would be passed
     */
    public Upload begin(long size, String owner) throws IOException {
        return begin(size, owner, null);
    }

    /**
     * {@link #begin(long, String)} of a blob whose digest the owner announced: bytes it already stores do not count
     * against its limit again (it may upload them again at its limit).
     */
    public Upload begin(long size, String owner, BlobDigest announced) throws IOException {
        promise(size, owner, announced);
        try {
            return new Upload(incoming.resolve(UUID.randomUUID() + ".part"), size, owner);
        } catch (IOException | RuntimeException e) {
            keep(size, owner);
            ended(size, owner);
            throw e;
        }
    }

    private synchronized void promise(long size, String owner, BlobDigest announced) throws IOException {
        if (size <= 0) {
            return;
        }
        long free = Files.getFileStore(incoming).getUsableSpace();
        if (free - promised - size < diskReserve) {
            throw full(
                    size + " more bytes"
                            + (promised > 0 ? " (after the " + promised + " that uploads under way announced)" : ""),
                    free);
        }
        long mine = promisedBy.getOrDefault(owner, 0L);
        if (!owner.isEmpty() && mine + size > (free - diskReserve) / 2) {
            throw full(
                    size + " more bytes of this environment's (after the " + mine + " its uploads under way announced,"
                            + " of the half of the room above the reserve one environment may announce)",
                    free);
        }
        BlobOwnerStore ledger = owners;
        long pending = pendingBy.getOrDefault(owner, 0L);
        // bytes it stores already do not count again: the same digest, announced with their size
        boolean storedAlready = announced != null
                && ledger != null
                && ledger.owns(owner, announced.hex())
                && size(announced).orElse(-1) == size;
        if (ledger != null && !owner.isEmpty() && !storedAlready) {
            long stored = ledger.stored(owner);
            if (stored + pending + size > perEnvironment) {
                throw new DiskFullException("this environment's blobs (datasets, code, query results, files) would"
                        + " pass its limit of " + mib(perEnvironment) + ": it stores "
                        + mib(stored) + (pending > 0 ? ", its uploads under way announced " + pending + " bytes" : "")
                        + ", and this one is " + size + " bytes; the blob was not stored"
                        + " (the server's --blob-storage-per-environment sets the limit; what nothing refers to stops"
                        + " counting after --unused-blobs-kept-for)");
            }
        }
        promised += size;
        promisedBy.put(owner, mine + size);
        pendingBy.put(owner, pending + size);
    }

    /** An upload that announced {@code size} bytes ended: committed (and recorded), or dropped. */
    private synchronized void ended(long size, String owner) {
        if (size > 0) {
            pendingBy.computeIfPresent(owner, (o, n) -> n > size ? n - size : null);
        }
    }

    /** Gives back promised bytes: written, or no longer coming. */
    private synchronized void keep(long size, String owner) {
        if (size > 0) {
            promised -= size;
            promisedBy.computeIfPresent(owner, (o, n) -> n > size ? n - size : null);
        }
    }

    private static String mib(long bytes) {
        return bytes / (1 << 20) + " MiB";
    }

    private DiskFullException full(String what, long free) {
        return new DiskFullException(DiskReserve.state(free, diskReserve) + ": " + what
                + " would not fit; the blob was not stored (free space on the server, or delete what it holds)");
    }

    /** One blob being written; {@link #commit} checks it, {@link #abort} drops it. */
    public final class Upload implements AutoCloseable {
        private final Path temp;
        private final OutputStream out;
        private final MessageDigest sha;
        private long written;
        private long checkedAt;
        private boolean done;
        /** Of the bytes it announced, those not written yet, still promised in the store. */
        private long promisedLeft;
        /** The bytes it announced, pending for its owner until it ends; 0 once ended. */
        private long pending;

        private final String owner;

        private Upload(Path temp, long announced, String owner) throws IOException {
            this.promisedLeft = announced;
            this.pending = announced;
            this.owner = owner;
            this.temp = temp;
            this.out = Files.newOutputStream(temp);
            try {
                this.sha = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("SHA-256 is required of every Java platform", e);
            }
        }

        /**
         * Appends bytes.
         *
         * @throws DiskFullException when the disk is left with less than its reserve; the blob is dropped
         */
        public void write(byte[] data, int offset, int length) throws IOException {
            out.write(data, offset, length);
            sha.update(data, offset, length);
            written += length;
            long arrived = Math.min(promisedLeft, length);
            if (arrived > 0) {
                promisedLeft -= arrived;
                keep(arrived, owner);
            }
            if (written - checkedAt >= DISK_CHECK_BYTES) {
                checkedAt = written;
                long free = Files.getFileStore(temp).getUsableSpace();
                if (free < diskReserve) {
                    close();
                    throw full("an upload of more than " + written + " bytes", free);
                }
            }
        }

        /** Bytes written so far. */
        public long written() {
            return written;
        }

        /**
         * Keeps the blob if its bytes have the expected digest and size; returns whether it was newly stored
         * (false: it was already present).
         *
         * @throws BlobMismatchException when the bytes do not match
         */
        public boolean commit(BlobDigest expected, long expectedSize) throws IOException, BlobMismatchException {
            closeOrAbort();
            done = true;
            release();
            try {
                String actual = HexFormat.of().formatHex(sha.digest());
                if (written != expectedSize || !actual.equals(expected.hex())) {
                    Files.deleteIfExists(temp);
                    throw new BlobMismatchException("the uploaded bytes (" + written + " bytes, sha256:" + actual
                            + ") do not match the announced blob (" + expectedSize + " bytes, " + expected + ")");
                }
                synchronized (placing) {
                    boolean stored = moveIntoPlace(expected);
                    recordOwner(expected);
                    return stored;
                }
            } finally {
                endPending(); // after the record: the bytes count as stored before they stop counting as pending
            }
        }

        /** Keeps the blob under the digest of the bytes written; returns that digest. */
        public BlobDigest commit() throws IOException {
            return commitComputed();
        }

        private BlobDigest commitComputed() throws IOException {
            closeOrAbort();
            done = true;
            release();
            try {
                BlobDigest digest = new BlobDigest(HexFormat.of().formatHex(sha.digest()));
                synchronized (placing) {
                    moveIntoPlace(digest);
                    recordOwner(digest);
                }
                return digest;
            } finally {
                endPending();
            }
        }

        /** Closes the file; one that fails to close is dropped, and gives back what it announced. */
        private void closeOrAbort() throws IOException {
            try {
                out.close();
            } catch (IOException e) {
                abort();
                throw e;
            }
        }

        private void endPending() {
            ended(pending, owner);
            pending = 0;
        }

        private void recordOwner(BlobDigest digest) {
            BlobOwnerStore ledger = owners;
            if (ledger != null && !owner.isEmpty()) {
                ledger.own(owner, digest.hex(), written);
            }
        }

        private boolean moveIntoPlace(BlobDigest digest) throws IOException {
            Path target = path(digest);
            if (Files.exists(target)) {
                Files.deleteIfExists(temp);
                return false;
            }
            Files.createDirectories(target.getParent());
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException | AtomicMoveNotSupportedException e) {
                Files.deleteIfExists(temp);
                return false;
            }
            return true;
        }

        /** Gives back what it announced and will not write now. */
        private void release() {
            keep(promisedLeft, owner);
            promisedLeft = 0;
        }

        /** Drops what was written, unless committed. */
        public void abort() {
            if (done) {
                return;
            }
            done = true;
            release();
            endPending();
            try {
                out.close();
                Files.deleteIfExists(temp);
            } catch (IOException ignored) {
                // a leftover temporary file is removed when the store is next opened
            }
        }

        @Override
        public void close() {
            abort();
        }
    }

    /** Uploaded bytes that do not match their announced digest or size. */
    public static final class BlobMismatchException extends Exception {
        public BlobMismatchException(String message) {
            super(message);
        }
    }
}
