package ai.chalk.compute.server.dataset;

import ai.chalk.compute.proto.server.v1.ArchiveDatasetRevisionRequest;
import ai.chalk.compute.proto.server.v1.ArchiveDatasetRevisionResponse;
import ai.chalk.compute.proto.server.v1.ArchiveDatasetRevisionsRequest;
import ai.chalk.compute.proto.server.v1.ArchiveDatasetRevisionsResponse;
import ai.chalk.compute.proto.server.v1.DatasetKind;
import ai.chalk.compute.proto.server.v1.DatasetMeta;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.DatasetRevisionMeta;
import ai.chalk.compute.proto.server.v1.DatasetRevisionStatus;
import ai.chalk.compute.proto.server.v1.DatasetVersion;
import ai.chalk.compute.proto.server.v1.DeleteDatasetRequest;
import ai.chalk.compute.proto.server.v1.DeleteDatasetResponse;
import ai.chalk.compute.proto.server.v1.DeleteMaterializedAggregateTileRequest;
import ai.chalk.compute.proto.server.v1.DeleteMaterializedAggregateTileResponse;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadRequest;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadResponse;
import ai.chalk.compute.proto.server.v1.GenerateDatasetEdfsRequest;
import ai.chalk.compute.proto.server.v1.GenerateDatasetEdfsResponse;
import ai.chalk.compute.proto.server.v1.GenerateDatasetStatsRequest;
import ai.chalk.compute.proto.server.v1.GenerateDatasetStatsResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetEdfsRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetEdfsResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionDownloadLinksRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionDownloadLinksResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPerformanceLinksRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPerformanceLinksResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPreviewRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPreviewResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisResponse;
import ai.chalk.compute.proto.server.v1.GetMaterializedAggregateTileRowCountChartRequest;
import ai.chalk.compute.proto.server.v1.GetMaterializedAggregateTileRowCountChartResponse;
import ai.chalk.compute.proto.server.v1.ListDatasetRevisionsRequest;
import ai.chalk.compute.proto.server.v1.ListDatasetRevisionsResponse;
import ai.chalk.compute.proto.server.v1.ListDatasetsRequest;
import ai.chalk.compute.proto.server.v1.ListDatasetsResponse;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTileFilesRequest;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTileFilesResponse;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTileTimelinesRequest;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTileTimelinesResponse;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTilesForTimelineRequest;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTilesForTimelineResponse;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTilesRequest;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTilesResponse;
import ai.chalk.compute.proto.server.v1.RenameDatasetRequest;
import ai.chalk.compute.proto.server.v1.RenameDatasetResponse;
import ai.chalk.compute.proto.server.v1.SortOrder;
import ai.chalk.compute.proto.server.v1.StreamDatasetRevisionDownloadLinksRequest;
import ai.chalk.compute.proto.server.v1.StreamDatasetRevisionDownloadLinksResponse;
import ai.chalk.compute.proto.volume.v1.DirectUpload;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.dataset.ParquetFiles.Preview;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.grpc.UnsentAnswers;
import ai.chalk.compute.server.store.DatasetStore;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import ai.chalk.compute.server.store.DatasetStore.DatasetQuery;
import ai.chalk.compute.server.store.DatasetStore.DatasetRecord;
import ai.chalk.compute.server.store.DatasetStore.RevisionRecord;
import ai.chalk.compute.server.store.DatasetStore.RevisionStatus;
import com.google.protobuf.ByteString;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Timestamp;
import com.google.protobuf.Value;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code chalk.server.v1.DatasetMetadataService}: the datasets of the caller's environment ({@link Caller}). Uploads go
 * through {@code GetDatasetUploadUris} (one signed PUT link per file, in one session) and
 * {@code FinalizeDatasetUpload}; downloads through signed GET links. Where the contract takes a dataset id, the
 * dataset's name is accepted too. Materialized aggregate tiles, EDFs, statistics and performance links answer
 * UNIMPLEMENTED: this server computes none of them.
 */
public final class DatasetMetadataServiceV1 extends DatasetMetadataServiceGrpc.DatasetMetadataServiceImplBase {

    /** Rows a preview shows. */
    static final int PREVIEW_ROWS = 100;
    /** Links per message of the streamed download links. */
    static final int LINKS_PER_MESSAGE = 100;

    private final DatasetManager datasets;
    private final DatasetStore store;

    public DatasetMetadataServiceV1(DatasetManager datasets) {
        this.datasets = datasets;
        this.store = datasets.store();
    }

    @Override
    public void listDatasets(ListDatasetsRequest request, StreamObserver<ListDatasetsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long after = Pages.cursor(request.hasCursor(), request.getCursor());
            ListDatasetsResponse.Builder b = ListDatasetsResponse.newBuilder();
            // every dataset here is named; a listing of anonymous ones only is empty
            if (!request.getKindList().isEmpty() && !request.getKindList().contains(DatasetKind.DATASET_KIND_NAMED)) {
                return b.build();
            }
            List<RevisionStatus> statuses = new ArrayList<>();
            for (DatasetRevisionStatus s : request.getStatusList()) {
                status(s).ifPresent(statuses::add);
            }
            if (!request.getStatusList().isEmpty() && statuses.isEmpty()) {
                return b.build();
            }
            List<DatasetRecord> page = store.datasets(
                    environment(),
                    new DatasetQuery(
                            request.hasSearch() ? request.getSearch() : null,
                            request.getIdsList(),
                            statuses,
                            request.getSortOrder() == SortOrder.SORT_ORDER_ASC,
                            after,
                            limit + 1));
            SchemaRoom room = new SchemaRoom();
            int shown = 0;
            for (DatasetRecord d : page.subList(0, Math.min(limit, page.size()))) {
                Optional<RevisionRecord> latest = store.latestRevision(d.id());
                Optional<RevisionRecord> withSchema =
                        latest.isEmpty() ? Optional.empty() : room.take(shown == 0, latest.get());
                if (latest.isPresent() && withSchema.isEmpty()) {
                    break; // the page ends here, with its cursor
                }
                b.addDatasets(meta(d, withSchema));
                shown++;
            }
            if (page.size() > shown) {
                b.setCursor(Long.toString(page.get(shown - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void getDataset(GetDatasetRequest request, StreamObserver<GetDatasetResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetDatasetResponse.newBuilder()
                        .setDataset(meta(datasets.dataset(environment(), required("id", request.getId()))))
                        .build());
    }

    @Override
    public void listDatasetRevisions(
            ListDatasetRevisionsRequest request, StreamObserver<ListDatasetRevisionsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long before = Pages.cursor(request.hasCursor(), request.getCursor());
            DatasetRecord d = datasets.dataset(environment(), required("dataset_id", request.getDatasetId()));
            List<RevisionRecord> page = store.revisionsOf(
                    d.id(),
                    request.getIncludeArchived(),
                    request.hasStartTime() ? instant(request.getStartTime()) : null,
                    request.hasEndTime() ? instant(request.getEndTime()) : null,
                    before,
                    limit + 1);
            ListDatasetRevisionsResponse.Builder b = ListDatasetRevisionsResponse.newBuilder();
            SchemaRoom room = new SchemaRoom();
            int shown = 0;
            for (RevisionRecord r : page.subList(0, Math.min(limit, page.size()))) {
                Optional<RevisionRecord> withSchema = room.take(shown == 0, r);
                if (withSchema.isEmpty()) {
                    break; // the page ends here, with its cursor
                }
                b.addRevisions(revisionMeta(withSchema.get()));
                shown++;
            }
            if (page.size() > shown) {
                b.setCursor(Long.toString(page.get(shown - 1).numericId()));
            }
            return b.build();
        });
    }

    @Override
    public void getDatasetRevision(
            GetDatasetRevisionRequest request, StreamObserver<GetDatasetRevisionResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetDatasetRevisionResponse.newBuilder()
                        .setRevision(revisionMeta(datasets.revision(
                                environment(),
                                required("revision_id", request.getRevisionId()),
                                request.getIncludeArchived())))
                        .build());
    }

    @Override
    public void getDatasetRevisionDownloadLinks(
            GetDatasetRevisionDownloadLinksRequest request,
            StreamObserver<GetDatasetRevisionDownloadLinksResponse> observer) {
        StatusErrors.unary(observer, () -> {
            Instant expiry = datasets.linkExpiry();
            return GetDatasetRevisionDownloadLinksResponse.newBuilder()
                    .addAllOutputUrls(
                            datasets.downloadLinks(environment(), required("revision_id", request.getRevisionId())))
                    .setExpiration(timestamp(expiry))
                    .build();
        });
    }

    @Override
    public void streamDatasetRevisionDownloadLinks(
            StreamDatasetRevisionDownloadLinksRequest request,
            StreamObserver<StreamDatasetRevisionDownloadLinksResponse> observer) {
        List<String> links;
        Instant expiry;
        try {
            expiry = datasets.linkExpiry();
            links = datasets.downloadLinks(environment(), required("revision_id", request.getRevisionId()));
            // the links are held for as long as the call lasts: a few MB for a revision of 10,000 files
            UnsentAnswers.reserveAnswer(
                    links.stream().mapToLong(l -> 64 + 2L * l.length()).sum());
        } catch (RuntimeException e) {
            observer.onError(StatusErrors.toStatus(e).asRuntimeException());
            return;
        }
        // sent as fast as the client reads: up to 10,000 links, a few MB, would otherwise wait in the server for a
        // client that reads none, however many such calls it makes
        var call = (ServerCallStreamObserver<StreamDatasetRevisionDownloadLinksResponse>) observer;
        Runnable pump = new Runnable() {
            private int next; // guarded by this
            private boolean done; // guarded by this

            @Override
            public synchronized void run() {
                while (!done && call.isReady() && !call.isCancelled()) {
                    if (next >= links.size()) {
                        done = true;
                        call.onCompleted();
                        return;
                    }
                    call.onNext(StreamDatasetRevisionDownloadLinksResponse.newBuilder()
                            .addAllOutputUrls(links.subList(next, Math.min(links.size(), next + LINKS_PER_MESSAGE)))
                            .setExpiration(timestamp(expiry))
                            .build());
                    next += LINKS_PER_MESSAGE;
                }
            }
        };
        call.setOnReadyHandler(pump);
        pump.run();
    }

    @Override
    public void getDatasetRevisionPreview(
            GetDatasetRevisionPreviewRequest request, StreamObserver<GetDatasetRevisionPreviewResponse> observer) {
        StatusErrors.unary(observer, () -> {
            Preview p = datasets.preview(environment(), required("revision_id", request.getRevisionId()), PREVIEW_ROWS);
            return GetDatasetRevisionPreviewResponse.newBuilder()
                    .setOutputPreview(p.rows())
                    .setSummary(p.summary())
                    .build();
        });
    }

    @Override
    public void getDatasetUploadUris(
            GetDatasetUploadUrisRequest request, StreamObserver<GetDatasetUploadUrisResponse> observer) {
        StatusErrors.unary(observer, () -> {
            DatasetManager.UploadUri uri = datasets.uploadUri(
                    environment(),
                    request.hasUploadSessionId() ? request.getUploadSessionId() : "",
                    request.getContentSize(),
                    request.hasHash() ? request.getHash() : "");
            return GetDatasetUploadUrisResponse.newBuilder()
                    .setUploadSessionId(uri.sessionId())
                    .setStorageObjectId(uri.objectId())
                    .setDirect(DirectUpload.newBuilder().setSignedUploadUri(uri.url()))
                    .build();
        });
    }

    @Override
    public void finalizeDatasetUpload(
            FinalizeDatasetUploadRequest request, StreamObserver<FinalizeDatasetUploadResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> FinalizeDatasetUploadResponse.newBuilder()
                        .setDataset(meta(datasets.finalizeUpload(
                                environment(),
                                required("upload_session_id", request.getUploadSessionId()),
                                request.getDatasetName(),
                                request.getArrowSchemaSerialized().toByteArray())))
                        .build());
    }

    @Override
    public void renameDataset(RenameDatasetRequest request, StreamObserver<RenameDatasetResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String newName = DatasetManager.checkName(request.getNewName());
            DatasetRecord d = datasets.dataset(environment(), required("dataset_id", request.getDatasetId()));
            if (!store.rename(environment(), d.id(), newName)) {
                throw ComputeException.alreadyExists("a dataset named " + newName + " exists already");
            }
            return RenameDatasetResponse.newBuilder()
                    .setDataset(meta(datasets.dataset(environment(), d.id())))
                    .build();
        });
    }

    @Override
    public void archiveDatasetRevision(
            ArchiveDatasetRevisionRequest request, StreamObserver<ArchiveDatasetRevisionResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> ArchiveDatasetRevisionResponse.newBuilder()
                        .setRevision(revisionMeta(archive(required("revision_id", request.getRevisionId()))))
                        .build());
    }

    @Override
    public void archiveDatasetRevisions(
            ArchiveDatasetRevisionsRequest request, StreamObserver<ArchiveDatasetRevisionsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            // each revision once, a page's worth at most: every id of the request was a revision's whole description
            // in the answer, and one revision named a million times made one call hold a million copies of its schema
            List<String> ids = request.getRevisionIdsList().stream().distinct().toList();
            if (ids.size() > Pages.MAX_LIMIT) {
                throw ComputeException.invalid("revision_ids names " + ids.size() + " revisions; at most "
                        + Pages.MAX_LIMIT + " are archived at once: archive them in several calls");
            }
            // all or none: an unknown id is reported before any revision is archived
            for (String id : ids) {
                datasets.revision(environment(), id, true);
            }
            ArchiveDatasetRevisionsResponse.Builder b = ArchiveDatasetRevisionsResponse.newBuilder();
            SchemaRoom room = new SchemaRoom();
            for (String id : ids) {
                RevisionRecord archived = archive(id);
                // every revision is archived; the answer describes the later ones without their schemas once it
                // holds SchemaRoom's worth (GetDatasetRevision has each)
                b.addArchivedRevisions(
                        revisionMeta(room.take(b.getArchivedRevisionsCount() == 0, archived.withArrowSchema(null))
                                .orElse(archived.withArrowSchema(null))));
            }
            return b.build();
        });
    }

    private RevisionRecord archive(String revisionId) {
        datasets.revision(environment(), revisionId, true);
        return store.archive(environment(), revisionId, Instant.now())
                .orElseThrow(() -> ComputeException.notFound("dataset revision " + revisionId + " does not exist"));
    }

    @Override
    public void deleteDataset(DeleteDatasetRequest request, StreamObserver<DeleteDatasetResponse> observer) {
        StatusErrors.unary(observer, () -> {
            DatasetRecord d = datasets.dataset(environment(), required("dataset_id", request.getDatasetId()));
            store.delete(environment(), d.id());
            return DeleteDatasetResponse.newBuilder().setDatasetId(d.id()).build();
        });
    }

    // ---------------------------------------------------------------------------------------------------------------
    // not served

    @Override
    public void getDatasetRevisionPerformanceLinks(
            GetDatasetRevisionPerformanceLinksRequest request,
            StreamObserver<GetDatasetRevisionPerformanceLinksResponse> observer) {
        unimplemented(
                observer,
                "performance summaries of dataset revisions: they come from Chalk's query engine,"
                        + " and revisions here are uploaded files");
    }

    @Override
    public void listMaterializedAggregateTiles(
            ListMaterializedAggregateTilesRequest request,
            StreamObserver<ListMaterializedAggregateTilesResponse> observer) {
        unimplemented(observer, MATERIALIZED);
    }

    @Override
    public void listMaterializedAggregateTileTimelines(
            ListMaterializedAggregateTileTimelinesRequest request,
            StreamObserver<ListMaterializedAggregateTileTimelinesResponse> observer) {
        unimplemented(observer, MATERIALIZED);
    }

    @Override
    public void listMaterializedAggregateTilesForTimeline(
            ListMaterializedAggregateTilesForTimelineRequest request,
            StreamObserver<ListMaterializedAggregateTilesForTimelineResponse> observer) {
        unimplemented(observer, MATERIALIZED);
    }

    @Override
    public void listMaterializedAggregateTileFiles(
            ListMaterializedAggregateTileFilesRequest request,
            StreamObserver<ListMaterializedAggregateTileFilesResponse> observer) {
        unimplemented(observer, MATERIALIZED);
    }

    @Override
    public void getMaterializedAggregateTileRowCountChart(
            GetMaterializedAggregateTileRowCountChartRequest request,
            StreamObserver<GetMaterializedAggregateTileRowCountChartResponse> observer) {
        unimplemented(observer, MATERIALIZED);
    }

    @Override
    public void deleteMaterializedAggregateTile(
            DeleteMaterializedAggregateTileRequest request,
            StreamObserver<DeleteMaterializedAggregateTileResponse> observer) {
        unimplemented(observer, MATERIALIZED);
    }

    @Override
    public void generateDatasetStats(
            GenerateDatasetStatsRequest request, StreamObserver<GenerateDatasetStatsResponse> observer) {
        unimplemented(
                observer,
                "generating dataset statistics; GetDatasetRevisionPreview returns a summary of every"
                        + " column instead");
    }

    @Override
    public void getDatasetEdfs(GetDatasetEdfsRequest request, StreamObserver<GetDatasetEdfsResponse> observer) {
        unimplemented(observer, EDFS);
    }

    @Override
    public void generateDatasetEdfs(
            GenerateDatasetEdfsRequest request, StreamObserver<GenerateDatasetEdfsResponse> observer) {
        unimplemented(observer, EDFS);
    }

    private static final String MATERIALIZED =
            "materialized aggregate tiles: they are built by Chalk's feature engine, which this server does not run";
    private static final String EDFS = "empirical distribution functions (EDFs) of dataset features: this server"
            + " keeps uploaded tables, not feature statistics";

    private static void unimplemented(StreamObserver<?> observer, String what) {
        observer.onError(Status.UNIMPLEMENTED
                .withDescription("This server does not implement " + what + ".")
                .asRuntimeException());
    }

    // ---------------------------------------------------------------------------------------------------------------
    // messages

    /**
     * The most bytes of Arrow schemas in one answer that describes many revisions ({@link SchemaRoom}): with the rest of
     * the answer, within the 4 MiB a gRPC client takes unless told otherwise.
     */
    static final long SCHEMA_ROOM_BYTES = 3L << 20;

    private DatasetMeta meta(DatasetRecord d) {
        return meta(d, store.latestRevision(d.id()).map(r -> r.withArrowSchema(store.arrowSchema(r.id()))));
    }

    private DatasetMeta meta(DatasetRecord d, Optional<RevisionRecord> latest) {
        DatasetMeta.Builder b = DatasetMeta.newBuilder()
                .setId(d.id())
                .setEnvironmentId(d.environment())
                .setDatasetName(d.name())
                .setCreatedAt(timestamp(d.createdAt()))
                .setNumRevisions(store.revisionCount(d.id()));
        latest.ifPresent(r -> b.setMostRecentRevision(revisionMeta(r)));
        return b.build();
    }

    /**
     * The Arrow schemas one answer describing many revisions carries: at most {@link #SCHEMA_ROOM_BYTES} together (a
     * schema may be a MiB, and a page of a thousand revisions held a GiB of them, read from the store at once, before
     * the answer's size was ever looked at). A listing ends its page where the next schema would not fit, with a
     * cursor to go on.
     */
    private final class SchemaRoom {
        private long used;

        /**
         * {@code r} with its schema read, if it fits (the first of an answer always does); empty where the answer
         * ends.
         */
        Optional<RevisionRecord> take(boolean first, RevisionRecord r) {
            byte[] schema = store.arrowSchema(r.id());
            if (!first && used + schema.length > SCHEMA_ROOM_BYTES) {
                return Optional.empty();
            }
            used += schema.length;
            return Optional.of(r.withArrowSchema(schema.length == 0 ? null : schema));
        }
    }

    static DatasetRevisionMeta revisionMeta(RevisionRecord r) {
        DatasetRevisionMeta.Builder b = DatasetRevisionMeta.newBuilder()
                .setNumericId(r.numericId())
                .setOfflineQueryId("")
                .setDatasetId(r.datasetId())
                .setStatus(status(r.status()))
                .setCreatedAt(timestamp(r.createdAt()))
                .setOutputVersion(DatasetVersion.DATASET_VERSION_NATIVE_COLUMN_NAMES);
        Struct.Builder metadata = Struct.newBuilder().putFields("revision_id", string(r.id()));
        if (r.status() == RevisionStatus.COMPLETED) {
            b.setNumRows(r.numRows())
                    .setNumRowsCalculated(r.numRows())
                    .setPhysicalSizeBytes(r.sizeBytes())
                    .setPhysicalSizeBytesCalculated(r.sizeBytes())
                    .setNumShards(r.numFiles());
            ListValue.Builder columns = ListValue.newBuilder();
            for (DatasetColumn c : r.columns()) {
                b.addOutputColumns(c.name());
                columns.addValues(Value.newBuilder()
                        .setStructValue(Struct.newBuilder()
                                .putFields("name", string(c.name()))
                                .putFields("type", string(c.type()))));
            }
            metadata.putFields(
                    "columns", Value.newBuilder().setListValue(columns).build());
        }
        if (r.message() != null) {
            metadata.putFields("error", string(r.message()));
        }
        if (r.completedAt() != null) {
            b.setCompletedAt(timestamp(r.completedAt()));
        }
        if (r.archivedAt() != null) {
            b.setArchivedAt(timestamp(r.archivedAt()));
        }
        if (r.arrowSchema() != null) {
            b.setOutputArrowSchemaSerialized(ByteString.copyFrom(r.arrowSchema()));
        }
        return b.setMetadata(Value.newBuilder().setStructValue(metadata)).build();
    }

    private static DatasetRevisionStatus status(RevisionStatus s) {
        return switch (s) {
            case WORKING -> DatasetRevisionStatus.DATASET_REVISION_STATUS_WORKING;
            case COMPLETED -> DatasetRevisionStatus.DATASET_REVISION_STATUS_COMPLETED;
            case FAILED -> DatasetRevisionStatus.DATASET_REVISION_STATUS_FAILED;
        };
    }

    private static Optional<RevisionStatus> status(DatasetRevisionStatus s) {
        return switch (s) {
            case DATASET_REVISION_STATUS_WORKING -> Optional.of(RevisionStatus.WORKING);
            case DATASET_REVISION_STATUS_COMPLETED -> Optional.of(RevisionStatus.COMPLETED);
            case DATASET_REVISION_STATUS_FAILED -> Optional.of(RevisionStatus.FAILED);
            default -> Optional.empty();
        };
    }

    private static Value string(String s) {
        return Value.newBuilder().setStringValue(s).build();
    }

    private static String required(String field, String value) {
        if (value.isEmpty()) {
            throw ComputeException.invalid(field + " is required");
        }
        return value;
    }

    private static String environment() {
        return Caller.current().environment();
    }

    private static Timestamp timestamp(Instant t) {
        return Timestamp.newBuilder()
                .setSeconds(t.getEpochSecond())
                .setNanos(t.getNano())
                .build();
    }

    private static Instant instant(Timestamp t) {
        return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
    }
}
