package ai.chalk.compute.server.dataset;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.blob.DiskFullException;
import ai.chalk.compute.server.dataset.ParquetFiles.Preview;
import ai.chalk.compute.server.dataset.ParquetFiles.UnreadableFileException;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.http.TransferRefusedException;
import ai.chalk.compute.server.http.Transfers;
import ai.chalk.compute.server.http.UploadTarget;
import ai.chalk.compute.server.store.DatasetStore;
import ai.chalk.compute.server.store.DatasetStore.Begun;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import ai.chalk.compute.server.store.DatasetStore.DatasetRecord;
import ai.chalk.compute.server.store.DatasetStore.FileRecord;
import ai.chalk.compute.server.store.DatasetStore.ObjectRecord;
import ai.chalk.compute.server.store.DatasetStore.RevisionRecord;
import ai.chalk.compute.server.store.DatasetStore.RevisionStatus;
import ai.chalk.compute.server.store.DatasetStore.SessionRecord;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.function.BiConsumer;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Datasets of each environment: upload sessions whose objects arrive through signed PUT links, finalized into
 * immutable revisions of Parquet files (CSV and JSON lines converted, one schema checked across the files), and the
 * signed GET links that download them. Every method takes the caller's environment; another environment's ids are
 * NOT_FOUND.
 */
public final class DatasetManager {

    /** The upload target of dataset objects on the HTTP port. */
    public static final String UPLOAD_TARGET = "dataset";
    /** The most files one revision may have. */
    public static final int MAX_FILES = 10_000;
    /**
     * The largest Arrow schema a revision keeps, as its uploader gives it: every SQL query reads the schemas of all the
     * environment's completed revisions, and one of 33 MiB per revision made each query hold gigabytes. A schema of
     * thousands of columns takes a few hundred KB.
     */
    public static final int MAX_ARROW_SCHEMA_BYTES = 1 << 20;
    /** The largest single file accepted (1 TiB: a bound against nonsense, not a quota). */
    public static final long MAX_FILE_BYTES = 1L << 40;

    private static final Logger log = LoggerFactory.getLogger(DatasetManager.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,127}");
    private static final Pattern SHA256_HEX = Pattern.compile("(?:sha256:)?([0-9a-fA-F]{64})");

    private final DatasetStore store;
    private final BlobStore blobs;
    private final Transfers transfers;
    private final ParquetFiles parquet;
    private final Clock clock;
    private final Path dataDir;
    /** Finalizing converts and scans files: two at a time keep a small server responsive. */
    private final Semaphore finalizing = new Semaphore(2, true);
    /** The uploads being finalized. */
    private final Set<Finalizing> finalizations = ConcurrentHashMap.newKeySet();

    /** An upload being finalized (each one itself, whatever it holds): its environment, the blobs it reads or wrote. */
    private static final class Finalizing {
        final String environment;
        final List<String> blobs = new CopyOnWriteArrayList<>();

        Finalizing(String environment) {
            this.environment = environment;
        }
    }
    /**
     * Previews reading at once, server-wide: each opens a database engine of its own (a gigabyte of memory, two
     * threads), and nothing else bounded them, so one tenant's calls in a loop took the host's memory.
     */
    private final Semaphore previewing = new Semaphore(2, true);
    /** One preview reading at a time per environment, so that one tenant holds at most one of the two. */
    private final Map<String, Semaphore> previewingEnvironments = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * @param workDir where conversions are written before they become blobs, and the engine spills
     */
    public DatasetManager(DatasetStore store, BlobStore blobs, Transfers transfers, Path workDir, Clock clock)
            throws IOException {
        this.store = store;
        this.blobs = blobs;
        this.transfers = transfers;
        this.parquet = new ParquetFiles(
                workDir, Math.min(1L << 30, Runtime.getRuntime().maxMemory() / 2));
        this.clock = clock;
        this.dataDir = workDir.toAbsolutePath().getParent();
        int[] failed = store.recover();
        if (failed[0] > 0 || failed[1] > 0) {
            log.warn(
                    "{} dataset upload session(s) and {} revision(s) a restart interrupted are now FAILED",
                    failed[0],
                    failed[1]);
        }
        transfers.uploadTarget(UPLOAD_TARGET, new Uploads());
    }

    /** What {@link #uploadUri} hands out: the session, the object and the link that uploads it. */
    public record UploadUri(String sessionId, String objectId, String url) {}

    /**
     * Adds an object of {@code size} bytes to the session {@code sessionId} (a new session when empty) and signs the
     * link that uploads it. {@code hash} is checked when it is a SHA-256 in hex ({@code sha256:} optional); other
     * forms are ignored.
     */
    public UploadUri uploadUri(String environment, String sessionId, long size, String hash) {
        if (size < 0 || size > MAX_FILE_BYTES) {
            throw ComputeException.invalid(
                    "content_size " + size + " is out of range: give the file's size in bytes, 0 to " + MAX_FILE_BYTES);
        }
        String announced = null;
        if (hash != null && !hash.isEmpty()) {
            var m = SHA256_HEX.matcher(hash);
            if (m.matches()) {
                announced = m.group(1).toLowerCase(Locale.ROOT);
            }
        }
        SessionRecord session = sessionId == null || sessionId.isEmpty()
                ? store.openSession(environment, UUID.randomUUID().toString(), clock.instant())
                : openSession(environment, sessionId);
        String objectId = UUID.randomUUID().toString();
        if (store.addObject(session.id(), objectId, size, announced, MAX_FILES).isEmpty()) {
            SessionRecord now = openSession(environment, session.id());
            throw ComputeException.exhausted("upload session " + now.id() + " has " + MAX_FILES
                    + " files already, the most one revision may have; finalize it and upload the rest as another");
        }
        return new UploadUri(session.id(), objectId, transfers.uploadUrl(UPLOAD_TARGET, objectId, transfers.ttl()));
    }

    private SessionRecord openSession(String environment, String sessionId) {
        SessionRecord session = store.session(environment, sessionId)
                .orElseThrow(() -> ComputeException.notFound("upload session " + sessionId + " does not exist"));
        switch (session.state()) {
            case SessionRecord.OPEN -> {
                return session;
            }
            case SessionRecord.FINALIZED ->
                throw ComputeException.refused("upload session " + sessionId
                        + " was finalized already; start a new session (leave upload_session_id empty)");
            default -> throw ComputeException.refused("upload session " + sessionId + " failed: " + session.message());
        }
    }

    /**
     * Makes the session's objects the newest revision of the dataset {@code name} (created when new). Returns the
     * dataset. A refused file (unreadable, another schema) leaves no revision and fails the session; a restart while
     * this runs leaves the revision FAILED.
     */
    public DatasetRecord finalizeUpload(String environment, String sessionId, String name, byte[] arrowSchema) {
        Finalizing finalization = new Finalizing(environment);
        finalizations.add(finalization);
        try {
            return finalizeUpload(environment, sessionId, name, arrowSchema, finalization.blobs);
        } finally {
            finalizations.remove(finalization);
        }
    }

    /**
     * Gives {@code use} the environment and digest (hex) of each blob that an upload being finalized reads or has
     * written: its session is no longer open, and no revision refers to them yet, so they are never collected.
     */
    public void eachFinalizingBlob(BiConsumer<String, String> use) {
        for (Finalizing f : finalizations) {
            f.blobs.forEach(digest -> use.accept(f.environment, digest));
        }
    }

    private DatasetRecord finalizeUpload(
            String environment, String sessionId, String name, byte[] arrowSchema, List<String> inUse) {
        checkName(name);
        if (arrowSchema.length > MAX_ARROW_SCHEMA_BYTES) {
            throw ComputeException.invalid("arrow_schema_serialized has " + arrowSchema.length
                    + " bytes; a revision keeps at most " + MAX_ARROW_SCHEMA_BYTES
                    + " (a schema of thousands of columns takes a few hundred KB)");
        }
        openSession(environment, sessionId);
        List<ObjectRecord> objects = store.objects(sessionId);
        if (objects.isEmpty()) {
            throw ComputeException.refused("upload session " + sessionId
                    + " has no files: ask for an upload URI and PUT a file to it before finalizing");
        }
        List<String> missing = objects.stream()
                .filter(o -> !o.uploaded())
                .map(o -> label(o, objects.size()))
                .toList();
        if (!missing.isEmpty()) {
            throw ComputeException.refused("not every file of upload session " + sessionId + " was uploaded: "
                    + String.join(", ", missing) + " (PUT each one to its upload URI before finalizing)");
        }
        objects.forEach(o -> inUse.add(o.digestHex())); // before the session is no longer open
        Begun begun = store.beginRevision(
                        environment,
                        sessionId,
                        name,
                        UUID.randomUUID().toString(),
                        UUID.randomUUID().toString(),
                        clock.instant())
                .orElseThrow(() -> ComputeException.refused(
                        "upload session " + sessionId + " was finalized or failed meanwhile; start a new one"));
        try {
            finalizing.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            store.failRevision(begun.revisionId(), "the server stopped before finalizing it", clock.instant());
            throw ComputeException.unavailable("the server is stopping; upload again");
        }
        try {
            List<FileRecord> files = new ArrayList<>();
            List<DatasetColumn> schema = null;
            for (ObjectRecord o : objects) {
                Stored stored = toParquet(o, objects.size(), inUse);
                if (schema == null) {
                    schema = stored.columns();
                } else {
                    SchemaCheck.requireSame(
                            label(objects.get(0), objects.size()), schema, label(o, objects.size()), stored.columns());
                }
                files.add(new FileRecord(o.ordinal(), stored.digest().hex(), stored.size(), stored.rows()));
            }
            for (FileRecord f : files) {
                // used again just before the revision refers to it: an upload converted slowly is not collected
                if (!blobs.use(environment, new BlobDigest(f.digestHex()))) {
                    throw new IOException("the bytes of file " + (f.ordinal() + 1) + " were collected while it was"
                            + " converted; upload it again");
                }
            }
            store.completeRevision(
                    begun.revisionId(), files, schema, arrowSchema.length == 0 ? null : arrowSchema, clock.instant());
            log.info(
                    "Dataset {} ({}) of environment {}: revision {} completed with {} file(s)",
                    name,
                    begun.dataset().id(),
                    environment,
                    begun.revisionId(),
                    files.size());
            return begun.dataset();
        } catch (RefusedFile e) {
            store.discardRevision(begun.revisionId(), begun.dataset().id(), begun.datasetCreated());
            store.failSession(sessionId, e.getMessage());
            throw ComputeException.invalid(e.getMessage());
        } catch (IOException | SQLException | RuntimeException e) {
            throw failed(begun, name, "finalizing", e);
        } finally {
            finalizing.release();
        }
    }

    /**
     * A revision the server wrote itself.
     *
     * @param dataset    the dataset, created by the write when it had none of that name
     * @param revisionId the new COMPLETED revision
     */
    public record Written(DatasetRecord dataset, String revisionId) {}

    /**
     * Stores a Parquet file the server wrote (an evaluation run's result) as a new COMPLETED revision of the
     * environment's dataset {@code name}, creating the dataset when it has none, so SQL and downloads read it as any
     * uploaded revision. It goes through an upload session of its own, closed at once, so a restart midway leaves a
     * FAILED revision as for uploads. The file is copied into the blob store; the caller may delete it afterwards.
     */
    public Written storeParquet(String environment, String name, Path file) {
        return storeParquet(environment, name, file, null);
    }

    /**
     * What the writer of a Parquet file knows of it: its rows and columns (as DuckDB's {@code DESCRIBE} names their
     * types), so that storing it need not read it back.
     */
    public record Shape(long rows, List<DatasetColumn> columns) {}

    /**
     * Stores a Parquet file the server wrote as {@link #storeParquet(String, String, Path)} does, with its shape as
     * its writer knows it (null: read from the file).
     */
    public Written storeParquet(String environment, String name, Path file, @Nullable Shape shape) {
        checkName(name);
        String sessionId = UUID.randomUUID().toString();
        store.openSession(environment, sessionId, clock.instant());
        Begun begun = store.beginRevision(
                        environment,
                        sessionId,
                        name,
                        UUID.randomUUID().toString(),
                        UUID.randomUUID().toString(),
                        clock.instant())
                .orElseThrow(() -> new IllegalStateException("the server's own session " + sessionId + " closed"));
        try {
            BlobDigest digest = blobs.put(file, environment);
            Path stored = blobs.path(digest);
            // each read of the file opens an engine of its own: a writer that knows the shape spares both
            long rows = shape != null ? shape.rows() : parquet.rows(stored);
            store.completeRevision(
                    begun.revisionId(),
                    List.of(new FileRecord(0, digest.hex(), Files.size(stored), rows)),
                    shape != null ? shape.columns() : parquet.schema(stored),
                    null,
                    clock.instant());
            return new Written(begun.dataset(), begun.revisionId());
        } catch (IOException | SQLException | UnreadableFileException | RuntimeException e) {
            throw failed(begun, name, "writing it", e);
        }
    }

    /**
     * Marks a revision FAILED because {@code what} failed on the server, and the error its caller gets: RESOURCE_EXHAUSTED
     * when the disk has less free than the server keeps (freeing space is the fix, not trying again), else UNAVAILABLE.
     */
    private ComputeException failed(Begun begun, String name, String what, Exception e) {
        // the data directory's path is the operator's business; the log has it
        String reason = what + " failed on the server: "
                + String.valueOf(e.getMessage()).replace(dataDir.toString(), "<data-dir>");
        store.failRevision(begun.revisionId(), reason, clock.instant());
        log.warn("Dataset {} revision {}: {}", name, begun.revisionId(), reason, e);
        String message = "revision " + begun.revisionId() + " of dataset " + name + " FAILED: " + reason;
        return e instanceof DiskFullException
                ? ComputeException.exhausted(message)
                : ComputeException.unavailable(message, e);
    }

    /** A file as a revision keeps it: the Parquet blob, its columns and rows. */
    private record Stored(BlobDigest digest, long size, long rows, List<DatasetColumn> columns) {}

    /** A file the user must fix: unreadable, or with another schema than the first. */
    static final class RefusedFile extends Exception {
        RefusedFile(String message) {
            super(message);
        }
    }

    private Stored toParquet(ObjectRecord o, int count, List<String> inUse)
            throws IOException, SQLException, RefusedFile {
        BlobDigest uploaded = new BlobDigest(o.digestHex());
        Path path = blobs.path(uploaded);
        // used now: kept from collection while converted and until the revision refers to it
        if (!blobs.use(o.environment(), uploaded) || !Files.exists(path)) {
            throw new IOException("the bytes of " + label(o, count) + " are gone from the blob store");
        }
        FileFormat format = FileFormat.of(path);
        try {
            if (format == FileFormat.PARQUET) {
                return new Stored(uploaded, Files.size(path), parquet.rows(path), parquet.schema(path));
            }
            Path converted = parquet.workFile(o.id());
            try {
                parquet.convert(path, format, converted);
                BlobDigest digest = blobs.put(converted, o.environment());
                inUse.add(digest.hex());
                Path stored = blobs.path(digest);
                return new Stored(digest, Files.size(stored), parquet.rows(stored), parquet.schema(stored));
            } finally {
                Files.deleteIfExists(converted);
            }
        } catch (UnreadableFileException e) {
            throw new RefusedFile(label(o, count) + ": " + e.getMessage());
        }
    }

    /** How messages name an uploaded file; the SDK replaces "storage object ID" with the file's path. */
    static String label(ObjectRecord o, int count) {
        return "storage object " + o.id() + (count > 1 ? " (file " + (o.ordinal() + 1) + " of " + count + ")" : "");
    }

    /** Checks a dataset name. */
    public static String checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw ComputeException.invalid("dataset name \"" + name + "\" is not valid: use 1 to 128 letters, digits,"
                    + " '_', '.' and '-', starting with a letter or digit");
        }
        return name;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // reading

    /** The environment's dataset with this id, or else this name. */
    public DatasetRecord dataset(String environment, String idOrName) {
        return store.dataset(environment, idOrName)
                .or(() -> store.datasetNamed(environment, idOrName))
                .orElseThrow(() -> ComputeException.notFound("dataset " + idOrName + " does not exist"));
    }

    /** The environment's revision with this id; an archived one only when asked for. */
    public RevisionRecord revision(String environment, String revisionId, boolean includeArchived) {
        RevisionRecord r = store.revision(environment, revisionId)
                .orElseThrow(() -> ComputeException.notFound("dataset revision " + revisionId + " does not exist"));
        if (r.archivedAt() != null && !includeArchived) {
            throw ComputeException.notFound("dataset revision " + revisionId + " is archived (since " + r.archivedAt()
                    + "); ask with include_archived to see it");
        }
        return r;
    }

    /** A revision that can be read: COMPLETED. */
    public RevisionRecord readable(String environment, String revisionId) {
        RevisionRecord r = revision(environment, revisionId, true);
        if (r.status() != RevisionStatus.COMPLETED) {
            throw ComputeException.refused("dataset revision " + revisionId + " is " + r.status()
                    + (r.message() != null ? ": " + r.message() : "") + "; only a COMPLETED revision has files");
        }
        return r;
    }

    /** Links that download each file of a COMPLETED revision, valid for the server's link lifetime. */
    public List<String> downloadLinks(String environment, String revisionId) {
        RevisionRecord r = readable(environment, revisionId);
        List<FileRecord> files = store.files(r.id());
        return files.stream()
                .map(f -> transfers.downloadUrl(
                        new BlobDigest(f.digestHex()),
                        String.format("part-%05d.parquet", f.ordinal()),
                        transfers.ttl()))
                .toList();
    }

    /** When links made now expire. */
    public Instant linkExpiry() {
        return transfers.expiry(transfers.ttl());
    }

    /** The first {@code rows} rows of a COMPLETED revision and a summary of its columns. */
    public Preview preview(String environment, String revisionId, int rows) {
        RevisionRecord r = readable(environment, revisionId);
        List<Path> paths = store.files(r.id()).stream()
                .map(f -> blobs.path(new BlobDigest(f.digestHex())))
                .toList();
        Semaphore mine = previewingEnvironments.computeIfAbsent(environment, e -> new Semaphore(1, true));
        try {
            if (!mine.tryAcquire(30, java.util.concurrent.TimeUnit.SECONDS)) {
                throw ComputeException.exhausted("this environment's previews read one at a time, and the one"
                        + " reading now took longer than 30 s; ask again shortly");
            }
            try {
                if (!previewing.tryAcquire(30, java.util.concurrent.TimeUnit.SECONDS)) {
                    throw ComputeException.exhausted("previews of other environments are reading; ask again shortly");
                }
                try {
                    return parquet.preview(paths, rows);
                } finally {
                    previewing.release();
                }
            } finally {
                mine.release();
            }
        } catch (SQLException e) {
            throw ComputeException.unavailable("reading revision " + revisionId + " failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ComputeException.unavailable("the preview was interrupted; ask again");
        }
    }

    /** Dataset objects arriving through their signed PUT links. */
    private final class Uploads implements UploadTarget {
        @Override
        public Expected expect(String objectId) throws TransferRefusedException {
            DatasetStore.ObjectWithSession o = store.object(objectId)
                    .orElseThrow(() -> new TransferRefusedException(404, "no dataset upload awaits this object"));
            if (!SessionRecord.OPEN.equals(o.sessionState())) {
                throw new TransferRefusedException(
                        409,
                        "the upload session of this object is " + o.sessionState()
                                + (o.sessionMessage() != null ? " (" + o.sessionMessage() + ")" : "")
                                + "; start a new upload");
            }
            if (o.object().uploaded()) {
                throw new TransferRefusedException(
                        409, "this object was uploaded already; ask for another upload URI for another file");
            }
            return new Expected(
                    o.object().size(),
                    Optional.ofNullable(o.object().announcedHex()).map(BlobDigest::new),
                    o.object().environment());
        }

        @Override
        public void stored(String objectId, BlobDigest digest, long size) throws TransferRefusedException {
            if (!store.objectUploaded(objectId, digest.hex())) {
                throw new TransferRefusedException(
                        409, "this object was uploaded meanwhile, or its session ended; start a new upload");
            }
        }
    }

    /**
     * A COMPLETED revision's Parquet files on this server's disk, for readers inside the server (SQL). The files are
     * immutable and stay while the dataset exists.
     *
     * @param datasetName the dataset's name now
     * @param files       the Parquet files in order, under the blob store
     * @param columns     their one schema
     */
    public record ReadableRevision(
            String datasetName, String revisionId, long numRows, List<Path> files, List<DatasetColumn> columns) {}

    /** The newest COMPLETED, unarchived revision of the environment's dataset {@code name}, if it has one. */
    public Optional<ReadableRevision> latestReadable(String environment, String name) {
        return store.latestCompleted(environment, name).map(r -> readable(name, r));
    }

    /** The COMPLETED revision {@code revisionId} of the environment (archived or not); NOT_FOUND or refused else. */
    public ReadableRevision readableRevision(String environment, String revisionId) {
        RevisionRecord r = readable(environment, revisionId);
        String name = store
                .datasets(
                        environment, new DatasetStore.DatasetQuery(null, List.of(r.datasetId()), List.of(), true, 0, 1))
                .stream()
                .map(DatasetRecord::name)
                .findFirst()
                .orElseThrow(() -> ComputeException.notFound("dataset revision " + revisionId + " does not exist"));
        return readable(name, r);
    }

    /** The names of the environment's datasets, in name order. */
    public List<String> names(String environment) {
        return store.names(environment);
    }

    private ReadableRevision readable(String name, RevisionRecord r) {
        List<Path> paths = store.files(r.id()).stream()
                .map(f -> blobs.path(new BlobDigest(f.digestHex())))
                .toList();
        return new ReadableRevision(name, r.id(), r.numRows(), paths, r.columns());
    }

    /** The store, for listing. */
    DatasetStore store() {
        return store;
    }
}
