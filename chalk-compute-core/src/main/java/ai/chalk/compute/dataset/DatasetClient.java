package ai.chalk.compute.dataset;

import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.error.DatasetNotFoundException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.server.v1.ArchiveDatasetRevisionRequest;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc.DatasetMetadataServiceBlockingStub;
import ai.chalk.compute.proto.server.v1.DeleteDatasetRequest;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionDownloadLinksRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPreviewRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPreviewResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisResponse;
import ai.chalk.compute.proto.server.v1.ListDatasetRevisionsRequest;
import ai.chalk.compute.proto.server.v1.ListDatasetRevisionsResponse;
import ai.chalk.compute.proto.server.v1.ListDatasetsRequest;
import ai.chalk.compute.proto.server.v1.ListDatasetsResponse;
import ai.chalk.compute.proto.server.v1.RenameDatasetRequest;
import io.grpc.Channel;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * The datasets of the client's environment: upload tables, list and describe them, download their revisions.
 * A dataset is a name with immutable revisions; each upload to a name makes its newest revision, stored on the server
 * as Parquet. File bytes never pass through gRPC: they stream over the server's signed HTTP links, so a file of any
 * size uploads and downloads with a fixed amount of memory.
 *
 * <pre>{@code
 * DatasetClient datasets = client.datasets();                        // or DatasetClient.of(channel)
 * Dataset orders = datasets.upload("orders", Path.of("jan.csv"), Path.of("feb.csv"));
 * orders.revisionId();                                               // the revision this upload made
 * datasets.upload("scores", List.of(Map.of("id", 1, "score", 0.9)));  // rows
 * List<Path> parts = datasets.download(orders.revisionId(), Path.of("out"));   // Parquet files
 * }</pre>
 *
 * <p>A client is thread-safe and holds nothing to close; its channel stays its creator's.
 */
public final class DatasetClient {

    private static final Pattern OBJECT = Pattern.compile("storage object ([A-Za-z0-9_-]+)( \\(file \\d+ of \\d+\\))?");
    private static final Pattern FILE_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,199}");
    private static final int PAGE = 500;

    private final DatasetMetadataServiceBlockingStub stub;
    private final LinkTransfer transfer;

    private DatasetClient(Channel channel, Optional<Path> trustCertificates) {
        this.stub = DatasetMetadataServiceGrpc.newBlockingStub(Objects.requireNonNull(channel, "channel"));
        this.transfer = new LinkTransfer(trustCertificates);
    }

    /**
     * The datasets of the server behind {@code channel}, in the environment the channel's credentials act in.
     *
     * @param channel a channel to the server, for example {@link ai.chalk.compute.sandbox.SandboxClient#channel()}
     * @return the client
     */
    public static DatasetClient of(Channel channel) {
        return new DatasetClient(channel, Optional.empty());
    }

    /**
     * The datasets reached through {@code client}'s connection and credentials; the same as
     * {@link ai.chalk.compute.sandbox.SandboxClient#datasets()}.
     *
     * @param client a connected client, such as a {@code SandboxClient}
     * @return the client
     */
    public static DatasetClient of(ai.chalk.compute.connection.ServerChannel client) {
        return new DatasetClient(client.channel(), client.trustCertificates());
    }

    // ---- uploading ----

    /**
     * Uploads files as the newest revision of dataset {@code name} (created when new). Each file is CSV (a header
     * line, then rows; types are detected), Parquet, or JSON lines, told by its content; several files must have one
     * schema (the same columns, in the same order, of the same types) and together form the revision. The server
     * stores each as Parquet.
     *
     * @param name  the dataset: 1 to 128 letters, digits, '_', '.' and '-', starting with a letter or digit
     * @param files one or more files
     * @return the dataset, its newest revision the one this upload made
     * @throws ai.chalk.compute.error.InvalidRequestException when a file cannot be read as CSV, Parquet or JSON
     *     lines, or the files' schemas differ: the message names the file and the column
     * @throws UncheckedIOException when a file cannot be read here
     */
    public Dataset upload(String name, Path... files) {
        Objects.requireNonNull(name, "name");
        if (files.length == 0) {
            throw new IllegalArgumentException("upload needs at least one file");
        }
        for (Path f : files) {
            if (!Files.isRegularFile(f) || !Files.isReadable(f)) {
                throw new UncheckedIOException(new IOException(f + " is not a readable file"));
            }
        }
        Map<String, Path> objects = new LinkedHashMap<>();
        String session = "";
        for (Path f : files) {
            long size;
            String hash;
            try {
                size = Files.size(f);
                hash = sha256(f);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + f + " to upload it", e);
            }
            GetDatasetUploadUrisRequest.Builder request = GetDatasetUploadUrisRequest.newBuilder()
                    .setContentSize(size)
                    .setHash("sha256:" + hash);
            if (!session.isEmpty()) {
                request.setUploadSessionId(session);
            }
            GetDatasetUploadUrisResponse uri =
                    ServerCall.run(ResourceKind.DATASET, () -> stub.getDatasetUploadUris(request.build()));
            if (!uri.hasDirect()) {
                throw new ChalkComputeException(
                        io.grpc.Status.Code.UNIMPLEMENTED,
                        "the server offered a " + uri.getUploadCase() + " upload, which this SDK does not perform;"
                                + " it uploads to direct signed URIs");
            }
            session = uri.getUploadSessionId();
            objects.put(uri.getStorageObjectId(), f);
            transfer.put(uri.getDirect().getSignedUploadUri(), f, f.toString());
        }
        String finalSession = session;
        try {
            return Dataset.of(ServerCall.run(
                            ResourceKind.DATASET,
                            () -> stub.finalizeDatasetUpload(FinalizeDatasetUploadRequest.newBuilder()
                                    .setUploadSessionId(finalSession)
                                    .setDatasetName(name)
                                    .build()))
                    .getDataset());
        } catch (ChalkComputeException e) {
            String message = e.serverMessage();
            if (message == null || !OBJECT.matcher(message).find()) {
                throw e;
            }
            // the server names uploaded objects; the user knows them by their paths
            Matcher m = OBJECT.matcher(message);
            StringBuilder named = new StringBuilder();
            while (m.find()) {
                Path p = objects.get(m.group(1));
                m.appendReplacement(named, Matcher.quoteReplacement(p != null ? p.toString() : m.group()));
            }
            m.appendTail(named);
            throw ChalkComputeException.of(e.statusCode(), named.toString(), e);
        }
    }

    /**
     * Uploads rows as the newest revision of dataset {@code name}. Each row maps column names to values: numbers,
     * booleans, text, {@code java.time} dates and timestamps, byte arrays (as base64 text), lists and maps; a missing
     * key is a null. The rows are written to a temporary file first, so the upload streams.
     *
     * @param name the dataset
     * @param rows at least one row
     * @return the dataset
     * @throws IllegalArgumentException when a value cannot be uploaded (its column and class are named)
     */
    public Dataset upload(String name, List<? extends Map<String, ?>> rows) {
        if (rows.isEmpty()) {
            throw new IllegalArgumentException("upload needs at least one row");
        }
        return uploadJsonLines(name, lines -> {
            for (Map<String, ?> row : rows) {
                lines.row(row);
            }
        });
    }

    /**
     * Uploads columns as the newest revision of dataset {@code name}: column names to their values, every column as
     * long as the others (values as for {@link #upload(String, List)}).
     *
     * @param name    the dataset
     * @param columns the columns, in order (use a {@link LinkedHashMap} to keep yours)
     * @return the dataset
     */
    public Dataset uploadColumns(String name, Map<String, ? extends List<?>> columns) {
        if (columns.isEmpty() || columns.values().iterator().next().isEmpty()) {
            throw new IllegalArgumentException("upload needs at least one column with at least one value");
        }
        return uploadJsonLines(name, lines -> lines.columns(columns));
    }

    /**
     * Uploads the rows of an Arrow batch as the newest revision of dataset {@code name}.
     *
     * @param name the dataset
     * @param root the batch (left open)
     * @return the dataset
     */
    public Dataset upload(String name, VectorSchemaRoot root) {
        return uploadJsonLines(name, lines -> lines.arrow(root));
    }

    /**
     * Uploads every batch {@code reader} yields as the newest revision of dataset {@code name}, a batch at a time.
     *
     * @param name   the dataset
     * @param reader the batches (left open)
     * @return the dataset
     */
    public Dataset upload(String name, ArrowReader reader) {
        return uploadJsonLines(name, lines -> {
            while (reader.loadNextBatch()) {
                lines.arrow(reader.getVectorSchemaRoot());
            }
        });
    }

    private interface RowWriter {
        void write(JsonLines lines) throws IOException;
    }

    private Dataset uploadJsonLines(String name, RowWriter writer) {
        Path file;
        try {
            file = Files.createTempFile("chalk-dataset-", ".jsonl");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary file for the rows to upload", e);
        }
        try {
            try (JsonLines lines = new JsonLines(file)) {
                writer.write(lines);
                if (lines.rows() == 0) {
                    throw new IllegalArgumentException("upload needs at least one row");
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write the rows to upload to " + file, e);
            }
            return upload(name, file);
        } finally {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a temporary file the system cleans up
            }
        }
    }

    // ---- reading ----

    /**
     * The dataset with this name (or id).
     *
     * @param nameOrId the dataset's name or id
     * @return the dataset, with its newest revision
     * @throws DatasetNotFoundException when the environment has none such
     */
    public Dataset get(String nameOrId) {
        return Dataset.of(ServerCall.run(
                        ResourceKind.DATASET,
                        () -> stub.getDataset(
                                GetDatasetRequest.newBuilder().setId(nameOrId).build()))
                .getDataset());
    }

    /**
     * Every dataset of the environment, newest first (all pages).
     *
     * @return the datasets
     */
    public List<Dataset> list() {
        List<Dataset> out = new ArrayList<>();
        String cursor = null;
        do {
            ListDatasetsRequest.Builder request =
                    ListDatasetsRequest.newBuilder().setLimit(PAGE);
            if (cursor != null) {
                request.setCursor(cursor);
            }
            ListDatasetsResponse page = ServerCall.run(ResourceKind.DATASET, () -> stub.listDatasets(request.build()));
            page.getDatasetsList().forEach(d -> out.add(Dataset.of(d)));
            cursor = page.hasCursor() && !page.getCursor().isEmpty() ? page.getCursor() : null;
        } while (cursor != null);
        return out;
    }

    /**
     * The revisions of a dataset that are not archived, newest first (all pages).
     *
     * @param nameOrId the dataset's name or id
     * @return the revisions
     * @throws DatasetNotFoundException when the environment has no such dataset
     */
    public List<DatasetRevision> revisions(String nameOrId) {
        List<DatasetRevision> out = new ArrayList<>();
        String cursor = null;
        do {
            ListDatasetRevisionsRequest.Builder request = ListDatasetRevisionsRequest.newBuilder()
                    .setDatasetId(nameOrId)
                    .setLimit(PAGE);
            if (cursor != null) {
                request.setCursor(cursor);
            }
            ListDatasetRevisionsResponse page =
                    ServerCall.run(ResourceKind.DATASET, () -> stub.listDatasetRevisions(request.build()));
            page.getRevisionsList().forEach(r -> out.add(DatasetRevision.of(r)));
            cursor = page.hasCursor() && !page.getCursor().isEmpty() ? page.getCursor() : null;
        } while (cursor != null);
        return out;
    }

    /**
     * One revision, archived or not.
     *
     * @param revisionId the revision's id
     * @return the revision
     * @throws DatasetNotFoundException when the environment has none such
     */
    public DatasetRevision revision(String revisionId) {
        return DatasetRevision.of(ServerCall.run(
                        ResourceKind.DATASET,
                        () -> stub.getDatasetRevision(GetDatasetRevisionRequest.newBuilder()
                                .setRevisionId(revisionId)
                                .setIncludeArchived(true)
                                .build()))
                .getRevision());
    }

    /**
     * The first rows of a completed revision and a summary of each column (type, min, max, distinct values, nulls).
     *
     * @param revisionId the revision's id
     * @return the preview
     * @throws ai.chalk.compute.error.FailedPreconditionException when the revision is not completed
     */
    public DatasetPreview preview(String revisionId) {
        GetDatasetRevisionPreviewResponse p = ServerCall.run(
                ResourceKind.DATASET,
                () -> stub.getDatasetRevisionPreview(GetDatasetRevisionPreviewRequest.newBuilder()
                        .setRevisionId(revisionId)
                        .build()));
        return DatasetPreview.of(p.getOutputPreview(), p.getSummary());
    }

    /**
     * Downloads the Parquet files of a completed revision into {@code dir} (created if missing), streaming each to
     * disk. Links that expire on the way are asked for again, and a broken connection resumes where it stopped.
     * Nothing is overwritten: when a file of the same name exists in {@code dir}, nothing is downloaded.
     *
     * @param revisionId the revision's id, e.g. {@link Dataset#revisionId()}
     * @param dir        the directory to write into
     * @return the files written, in order
     * @throws UncheckedIOException wrapping a {@link FileAlreadyExistsException} when a file would be overwritten, or
     *     the failure to write one
     * @throws ai.chalk.compute.error.FailedPreconditionException when the revision is not completed
     */
    public List<Path> download(String revisionId, Path dir) {
        return download(revisionId, dir, links(revisionId));
    }

    /** As {@link #download(String, Path)}, starting from links already at hand (which may have expired). */
    List<Path> download(String revisionId, Path dir, List<String> links) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + dir + " to download into", e);
        }
        List<Path> targets = new ArrayList<>();
        for (String link : links) {
            String path = URI.create(link).getPath();
            String name = path.substring(path.lastIndexOf('/') + 1);
            if (!FILE_NAME.matcher(name).matches() || name.startsWith(".")) {
                throw new ChalkComputeException(
                        io.grpc.Status.Code.INTERNAL,
                        "the server sent a download link with an unusable file name: " + link);
            }
            Path target = dir.resolve(name);
            if (Files.exists(target) || targets.contains(target)) {
                throw new UncheckedIOException(new FileAlreadyExistsException(
                        target.toString(),
                        null,
                        "download does not overwrite files: choose an empty directory or remove the file"));
            }
            targets.add(target);
        }
        List<String> current = links;
        for (int i = 0; i < targets.size(); i++) {
            Path target = targets.get(i);
            Path part;
            try {
                part = Files.createTempFile(dir, "." + target.getFileName(), ".part");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write in " + dir, e);
            }
            try {
                current = transfer.get(
                        current,
                        i,
                        () -> links(revisionId),
                        part,
                        target.getFileName().toString());
                Files.move(part, target); // never REPLACE_EXISTING: a file made meanwhile is not overwritten either
            } catch (FileAlreadyExistsException e) {
                throw new UncheckedIOException(new FileAlreadyExistsException(
                        target.toString(), null, "download does not overwrite files; it appeared during the download"));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot move the downloaded " + part + " to " + target, e);
            } finally {
                try {
                    Files.deleteIfExists(part);
                } catch (IOException ignored) {
                    // a hidden leftover beside the files
                }
            }
        }
        return List.copyOf(targets);
    }

    /** Fresh download links of a revision's files, in order. */
    List<String> links(String revisionId) {
        return ServerCall.run(
                        ResourceKind.DATASET,
                        () -> stub.getDatasetRevisionDownloadLinks(GetDatasetRevisionDownloadLinksRequest.newBuilder()
                                .setRevisionId(revisionId)
                                .build()))
                .getOutputUrlsList();
    }

    // ---- changing ----

    /**
     * Renames a dataset; its id and revisions stay.
     *
     * @param nameOrId the dataset's name or id
     * @param newName  the new name
     * @return the dataset
     * @throws ChalkComputeException with status {@code ALREADY_EXISTS} when the name is taken
     */
    public Dataset rename(String nameOrId, String newName) {
        return Dataset.of(ServerCall.run(
                        ResourceKind.DATASET,
                        () -> stub.renameDataset(RenameDatasetRequest.newBuilder()
                                .setDatasetId(nameOrId)
                                .setNewName(newName)
                                .build()))
                .getDataset());
    }

    /**
     * Archives a revision: it leaves the listings and stops being the dataset's newest; it can still be read by id.
     *
     * @param revisionId the revision's id
     * @return the revision, archived
     */
    public DatasetRevision archive(String revisionId) {
        return DatasetRevision.of(ServerCall.run(
                        ResourceKind.DATASET,
                        () -> stub.archiveDatasetRevision(ArchiveDatasetRevisionRequest.newBuilder()
                                .setRevisionId(revisionId)
                                .build()))
                .getRevision());
    }

    /**
     * Deletes a dataset and all its revisions.
     *
     * @param nameOrId the dataset's name or id
     * @throws DatasetNotFoundException when the environment has none such
     */
    public void delete(String nameOrId) {
        ServerCall.run(
                ResourceKind.DATASET,
                () -> stub.deleteDataset(
                        DeleteDatasetRequest.newBuilder().setDatasetId(nameOrId).build()));
    }

    private static String sha256(Path file) throws IOException {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
        byte[] buffer = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                sha.update(buffer, 0, n);
            }
        }
        return HexFormat.of().formatHex(sha.digest());
    }
}
