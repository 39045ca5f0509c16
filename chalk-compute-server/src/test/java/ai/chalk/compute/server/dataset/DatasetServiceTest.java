package ai.chalk.compute.server.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.server.v1.ArchiveDatasetRevisionRequest;
import ai.chalk.compute.proto.server.v1.ArchiveDatasetRevisionsRequest;
import ai.chalk.compute.proto.server.v1.DatasetMeta;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc.DatasetMetadataServiceBlockingStub;
import ai.chalk.compute.proto.server.v1.DatasetRevisionMeta;
import ai.chalk.compute.proto.server.v1.DatasetRevisionStatus;
import ai.chalk.compute.proto.server.v1.DeleteDatasetRequest;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetEdfsRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionDownloadLinksRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPreviewRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionPreviewResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisResponse;
import ai.chalk.compute.proto.server.v1.ListDatasetRevisionsRequest;
import ai.chalk.compute.proto.server.v1.ListDatasetsRequest;
import ai.chalk.compute.proto.server.v1.ListMaterializedAggregateTilesRequest;
import ai.chalk.compute.proto.server.v1.RenameDatasetRequest;
import ai.chalk.compute.proto.server.v1.StreamDatasetRevisionDownloadLinksRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.store.Database;
import ai.chalk.compute.server.store.DatasetStore;
import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code DatasetMetadataService} over TCP as an independent client uses it: signed upload links PUT with a plain HTTP
 * client, real Parquet written and read back by DuckDB, restarts of a real server.
 */
class DatasetServiceTest {

    @TempDir
    Path dataDir;

    @TempDir
    Path files;

    private final HttpClient http = HttpClient.newHttpClient();

    private static DatasetMetadataServiceBlockingStub api(ManagedChannel channel) {
        return DatasetMetadataServiceGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    @Test
    void aCsvUploadBecomesAParquetRevisionThatDownloadsAndPreviews() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            Path csv = write("prices.csv", "sku,price,in_stock\nsku-1,9.5,true\nsku-2,12.25,false\nsku-3,3.0,true\n");
            DatasetMeta dataset = upload(api, "prices", csv);
            assertThat(dataset.getDatasetName()).isEqualTo("prices");
            DatasetRevisionMeta revision = dataset.getMostRecentRevision();
            assertThat(revision.getStatus()).isEqualTo(DatasetRevisionStatus.DATASET_REVISION_STATUS_COMPLETED);
            assertThat(revision.getNumRows()).isEqualTo(3);
            assertThat(revision.getNumShards()).isEqualTo(1);
            assertThat(revision.getOutputColumnsList()).containsExactly("sku", "price", "in_stock");
            String revisionId = revisionId(revision);

            List<String> links = api.getDatasetRevisionDownloadLinks(GetDatasetRevisionDownloadLinksRequest.newBuilder()
                            .setRevisionId(revisionId)
                            .build())
                    .getOutputUrlsList();
            assertThat(links).hasSize(1);
            Path downloaded = files.resolve("down.parquet");
            HttpResponse<Path> got = http.send(
                    HttpRequest.newBuilder(URI.create(links.get(0))).build(),
                    HttpResponse.BodyHandlers.ofFile(downloaded));
            assertThat(got.statusCode()).isEqualTo(200);
            assertThat(duck("SELECT string_agg(sku || '=' || price, ',' ORDER BY sku) FROM read_parquet('" + downloaded
                            + "')"))
                    .isEqualTo("sku-1=9.5,sku-2=12.25,sku-3=3.0");

            GetDatasetRevisionPreviewResponse preview =
                    api.getDatasetRevisionPreview(GetDatasetRevisionPreviewRequest.newBuilder()
                            .setRevisionId(revisionId)
                            .build());
            var rows = preview.getOutputPreview().getListValue().getValuesList();
            assertThat(rows).hasSize(3);
            assertThat(rows.get(1).getStructValue().getFieldsMap().get("price").getNumberValue())
                    .isEqualTo(12.25);
            assertThat(rows.get(1)
                            .getStructValue()
                            .getFieldsMap()
                            .get("in_stock")
                            .getBoolValue())
                    .isFalse();
            assertThat(preview.getSummary()
                            .getStructValue()
                            .getFieldsMap()
                            .get("columns")
                            .getListValue()
                            .getValuesCount())
                    .isEqualTo(3);

            var streamed = new ArrayList<String>();
            api.streamDatasetRevisionDownloadLinks(StreamDatasetRevisionDownloadLinksRequest.newBuilder()
                            .setRevisionId(revisionId)
                            .build())
                    .forEachRemaining(m -> streamed.addAll(m.getOutputUrlsList()));
            assertThat(streamed).hasSize(1);
        }
    }

    @Test
    void aPreviewShowsTheStartOfLongTextCells() throws Exception {
        // a file of long strings compresses to kilobytes; a preview read each cell whole into the server's heap
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            String longText = "y".repeat(20_000);
            Path csv = write("notes.csv", "id,\"the \"\"note\"\"\"\n1," + longText + "\n2,short\n");
            String revisionId = revisionId(upload(api, "notes", csv).getMostRecentRevision());
            var rows = api.getDatasetRevisionPreview(GetDatasetRevisionPreviewRequest.newBuilder()
                            .setRevisionId(revisionId)
                            .build())
                    .getOutputPreview()
                    .getListValue()
                    .getValuesList();
            assertThat(rows).hasSize(2);
            String cut = rows.get(0)
                    .getStructValue()
                    .getFieldsMap()
                    .get("the \"note\"")
                    .getStringValue();
            assertThat(cut)
                    .hasSize(ParquetFiles.PREVIEW_CELL_CHARS + 3)
                    .startsWith("yyyy")
                    .endsWith("y...");
            assertThat(rows.get(1)
                            .getStructValue()
                            .getFieldsMap()
                            .get("the \"note\"")
                            .getStringValue())
                    .isEqualTo("short");
            assertThat(rows.get(1).getStructValue().getFieldsMap().get("id").getNumberValue())
                    .isEqualTo(2);

            // long text inside a list, a struct or a blob is cut too: they were printed whole
            Path nested = parquet(
                    "nested.parquet",
                    "SELECT range AS id, [repeat('l', 20000)] AS list, {'s': repeat('s', 20000)} AS struct,"
                            + " repeat('b', 20000)::BLOB AS blob, 1.5::DOUBLE AS number FROM range(2)");
            String nestedRevision = revisionId(upload(api, "nested", nested).getMostRecentRevision());
            var preview = api.getDatasetRevisionPreview(GetDatasetRevisionPreviewRequest.newBuilder()
                    .setRevisionId(nestedRevision)
                    .build());
            var first = preview.getOutputPreview()
                    .getListValue()
                    .getValues(0)
                    .getStructValue()
                    .getFieldsMap();
            for (String column : List.of("list", "struct", "blob")) {
                assertThat(first.get(column).getStringValue())
                        .as(column)
                        .hasSize(ParquetFiles.PREVIEW_CELL_CHARS + 3)
                        .endsWith("...");
            }
            assertThat(first.get("number").getNumberValue()).isEqualTo(1.5);
            assertThat(first.get("id").getNumberValue()).isEqualTo(0);
            assertThat(preview.toString().length()).as("the whole answer").isLessThan(200_000);
        }
    }

    @Test
    void severalParquetFilesOfOneSchemaMakeOneRevisionAndANewUploadANewRevision() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            Path a = parquet("a.parquet", "SELECT range AS id, range * 2 AS doubled FROM range(0, 1000)");
            Path b = parquet("b.parquet", "SELECT range AS id, range * 2 AS doubled FROM range(1000, 1500)");
            DatasetMeta first = upload(api, "numbers", a, b);
            assertThat(first.getMostRecentRevision().getNumRows()).isEqualTo(1500);
            assertThat(first.getMostRecentRevision().getNumShards()).isEqualTo(2);

            Path c = write("more.csv", "id,doubled\n7,14\n");
            DatasetMeta second = upload(api, "numbers", c);
            assertThat(second.getId()).isEqualTo(first.getId());
            assertThat(second.getNumRevisions()).isEqualTo(2);
            assertThat(second.getMostRecentRevision().getNumRows()).isEqualTo(1);

            var revisions = api.listDatasetRevisions(ListDatasetRevisionsRequest.newBuilder()
                            .setDatasetId("numbers")
                            .build())
                    .getRevisionsList();
            assertThat(revisions).extracting(DatasetRevisionMeta::getNumRows).containsExactly(1L, 1500L);
            // what readers inside the server (SQL) get: the newest completed revision's files, or a revision by id
            var latest = server.server
                    .datasets()
                    .latestReadable("default", "numbers")
                    .orElseThrow();
            assertThat(latest.numRows()).isEqualTo(1);
            assertThat(duck("SELECT sum(doubled)::VARCHAR FROM read_parquet('"
                            + latest.files().get(0) + "')"))
                    .isEqualTo("14");
            var older = server.server.datasets().readableRevision("default", revisionId(first.getMostRecentRevision()));
            assertThat(older.datasetName()).isEqualTo("numbers");
            assertThat(older.files()).hasSize(2);
            assertThat(older.columns())
                    .extracting(col -> col.name() + " " + col.type())
                    .containsExactly("id BIGINT", "doubled BIGINT");
            assertThat(server.server.datasets().latestReadable("other-env", "numbers"))
                    .isEmpty();
            assertThat(server.server.datasets().names("default")).containsExactly("numbers");
            // the first revision is unchanged by the second
            assertThat(api.getDatasetRevision(GetDatasetRevisionRequest.newBuilder()
                                    .setRevisionId(revisionId(first.getMostRecentRevision()))
                                    .build())
                            .getRevision()
                            .getNumRows())
                    .isEqualTo(1500);
        }
    }

    @Test
    void filesOfDifferentSchemasAreRefusedNamingTheFileAndTheColumnAndLeaveNothing() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            Path a = write("a.csv", "id,price\n1,9.5\n");
            Path b = write("b.csv", "id,cost\n2,3.5\n");
            UploadSession session = uploadFiles(api, a, b);
            assertThatThrownBy(() -> session.finalize(api, "mismatched"))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                        assertThat(e.getStatus().getDescription())
                                .contains("storage object " + session.objectIds.get(1) + " (file 2 of 2)")
                                .contains("column \"cost\"")
                                .contains("storage object " + session.objectIds.get(0));
                    });
            Path c = parquet("c.parquet", "SELECT 1::INTEGER AS id, 9.5::DOUBLE AS price");
            Path d = parquet("d.parquet", "SELECT 2::INTEGER AS id, 'ten' AS price");
            UploadSession typed = uploadFiles(api, c, d);
            assertThatThrownBy(() -> typed.finalize(api, "mismatched"))
                    .hasMessageContaining("column \"price\" of type VARCHAR where storage object");
            assertThat(api.listDatasets(ListDatasetsRequest.getDefaultInstance())
                            .getDatasetsList())
                    .isEmpty();
        }
    }

    /**
     * A revision kept its Arrow schema as sent, up to a whole 33 MiB message, and every SQL query reads the schemas of
     * all the environment's revisions: a hundred such revisions made each query hold gigabytes. A schema past 1 MiB is
     * refused, and the session can still be finalized with a sensible one.
     */
    @Test
    void anArrowSchemaPastTheBoundIsRefusedAndTheSessionStaysOpen() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            UploadSession session = uploadFiles(api, write("s.csv", "id\n1\n"));
            FinalizeDatasetUploadRequest.Builder finalize = FinalizeDatasetUploadRequest.newBuilder()
                    .setUploadSessionId(session.sessionId())
                    .setDatasetName("schemas")
                    .setArrowSchemaSerialized(ByteString.copyFrom(new byte[DatasetManager.MAX_ARROW_SCHEMA_BYTES + 1]));
            assertThatThrownBy(() -> api.finalizeDatasetUpload(finalize.build()))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                        assertThat(e.getStatus().getDescription())
                                .isEqualTo("arrow_schema_serialized has " + (DatasetManager.MAX_ARROW_SCHEMA_BYTES + 1)
                                        + " bytes; a revision keeps at most " + DatasetManager.MAX_ARROW_SCHEMA_BYTES
                                        + " (a schema of thousands of columns takes a few hundred KB)");
                    });
            assertThat(api.finalizeDatasetUpload(finalize.setArrowSchemaSerialized(ByteString.copyFromUtf8("schema"))
                                    .build())
                            .getDataset()
                            .getMostRecentRevision()
                            .getNumRows())
                    .isEqualTo(1);
        }
    }

    /**
     * An answer describing many revisions carries at most 3 MiB of their schemas (a MiB each at most): a page of a
     * thousand revisions held a GiB of them, read from the store at once, and an archive call naming one revision a
     * million times described it a million times. A listing's page ends where the next schema would not fit, with its
     * cursor; an archive call takes each revision once, at most a thousand.
     */
    @Test
    void answersDescribingManyRevisionsHoldABoundedAmountOfSchemas() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            ByteString wide = ByteString.copyFrom(new byte[DatasetManager.MAX_ARROW_SCHEMA_BYTES]);
            List<String> revisions = new ArrayList<>();
            String datasetId = null;
            for (int i = 0; i < 5; i++) {
                UploadSession session = uploadFiles(api, write("w" + i + ".csv", "id\n" + i + "\n"));
                DatasetMeta d = api.finalizeDatasetUpload(FinalizeDatasetUploadRequest.newBuilder()
                                .setUploadSessionId(session.sessionId())
                                .setDatasetName("wide")
                                .setArrowSchemaSerialized(wide)
                                .build())
                        .getDataset();
                datasetId = d.getId();
                revisions.add(revisionId(d.getMostRecentRevision()));
            }
            var first = api.listDatasetRevisions(ListDatasetRevisionsRequest.newBuilder()
                    .setDatasetId(datasetId)
                    .build());
            assertThat(first.getRevisionsList())
                    .hasSize(3)
                    .allSatisfy(
                            r -> assertThat(r.getOutputArrowSchemaSerialized()).isEqualTo(wide));
            assertThat(first.hasCursor()).isTrue();
            var rest = api.listDatasetRevisions(ListDatasetRevisionsRequest.newBuilder()
                    .setDatasetId(datasetId)
                    .setCursor(first.getCursor())
                    .build());
            assertThat(rest.getRevisionsList()).hasSize(2);
            assertThat(rest.hasCursor()).isFalse();
            List<String> listed = new ArrayList<>();
            first.getRevisionsList().forEach(r -> listed.add(revisionId(r)));
            rest.getRevisionsList().forEach(r -> listed.add(revisionId(r)));
            assertThat(listed).containsExactlyInAnyOrderElementsOf(revisions);

            List<String> unknown = new ArrayList<>();
            for (int i = 0; i <= 1000; i++) {
                unknown.add("dsr-none-" + i);
            }
            assertThatThrownBy(() -> api.archiveDatasetRevisions(ArchiveDatasetRevisionsRequest.newBuilder()
                            .addAllRevisionIds(unknown)
                            .build()))
                    .hasMessageContaining("INVALID_ARGUMENT: revision_ids names 1001 revisions; at most 1000");
            ArchiveDatasetRevisionsRequest.Builder archive = ArchiveDatasetRevisionsRequest.newBuilder();
            for (int i = 0; i < 10_000; i++) {
                archive.addAllRevisionIds(revisions);
            }
            var archived = api.archiveDatasetRevisions(archive.build()).getArchivedRevisionsList();
            assertThat(archived)
                    .hasSize(5)
                    .allSatisfy(r -> assertThat(r.hasArchivedAt()).isTrue());
            assertThat(archived.stream()
                            .filter(r -> !r.getOutputArrowSchemaSerialized().isEmpty()))
                    .hasSize(3);
        }
    }

    @Test
    void aBrokenParquetFileIsRefusedWithoutShowingTheServersPaths() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            Path broken = files.resolve("broken.parquet");
            Files.write(broken, "PAR1 this is no parquet footer PAR1".getBytes(StandardCharsets.US_ASCII));
            UploadSession session = uploadFiles(api, broken);
            assertThatThrownBy(() -> session.finalize(api, "broken"))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                        assertThat(e.getStatus().getDescription())
                                .startsWith(
                                        "storage object " + session.objectIds.get(0) + ": cannot read it as Parquet")
                                .doesNotContain(dataDir.toString())
                                .doesNotContain("sha256/");
                    });
            // the server keeps serving, and the session cannot be finalized again
            assertThatThrownBy(() -> session.finalize(api, "broken"))
                    .hasMessageContaining("FAILED_PRECONDITION: upload session " + session.sessionId() + " failed:")
                    .hasMessageContaining("cannot read it as Parquet");
            assertThat(upload(api, "fine", write("fine.csv", "a\n1\n"))
                            .getMostRecentRevision()
                            .getNumRows())
                    .isEqualTo(1);
        }
    }

    @Test
    void renameArchiveAndDeleteAndTheRpcsNotServedSaySo() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            DatasetMeta one = upload(api, "draft", write("x.csv", "a\n1\n"));
            DatasetMeta two = upload(api, "draft", write("y.csv", "a\n2\n"));
            upload(api, "other", write("z.csv", "a\n3\n"));
            assertThatThrownBy(() -> api.renameDataset(RenameDatasetRequest.newBuilder()
                            .setDatasetId(one.getId())
                            .setNewName("other")
                            .build()))
                    .hasMessageContaining("ALREADY_EXISTS");
            assertThat(api.renameDataset(RenameDatasetRequest.newBuilder()
                                    .setDatasetId(one.getId())
                                    .setNewName("final")
                                    .build())
                            .getDataset()
                            .getDatasetName())
                    .isEqualTo("final");

            String newest = revisionId(two.getMostRecentRevision());
            DatasetRevisionMeta archived = api.archiveDatasetRevision(ArchiveDatasetRevisionRequest.newBuilder()
                            .setRevisionId(newest)
                            .build())
                    .getRevision();
            assertThat(archived.hasArchivedAt()).isTrue();
            DatasetMeta after = api.getDataset(
                            GetDatasetRequest.newBuilder().setId("final").build())
                    .getDataset();
            assertThat(after.getNumRevisions()).isEqualTo(1);
            assertThat(revisionId(after.getMostRecentRevision())).isEqualTo(revisionId(one.getMostRecentRevision()));
            assertThatThrownBy(() -> api.getDatasetRevision(GetDatasetRevisionRequest.newBuilder()
                            .setRevisionId(newest)
                            .build()))
                    .hasMessageContaining("is archived");
            assertThat(api.getDatasetRevision(GetDatasetRevisionRequest.newBuilder()
                                    .setRevisionId(newest)
                                    .setIncludeArchived(true)
                                    .build())
                            .getRevision()
                            .hasArchivedAt())
                    .isTrue();

            api.deleteDataset(
                    DeleteDatasetRequest.newBuilder().setDatasetId(one.getId()).build());
            assertThatThrownBy(() -> api.getDataset(
                            GetDatasetRequest.newBuilder().setId("final").build()))
                    .hasMessageContaining("NOT_FOUND");
            assertThat(api.listDatasets(ListDatasetsRequest.getDefaultInstance())
                            .getDatasetsList())
                    .extracting(DatasetMeta::getDatasetName)
                    .containsExactly("other");

            assertThatThrownBy(() -> api.listMaterializedAggregateTiles(
                            ListMaterializedAggregateTilesRequest.getDefaultInstance()))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED))
                    .hasMessageContaining("does not implement materialized aggregate tiles");
            assertThatThrownBy(() -> api.getDatasetEdfs(GetDatasetEdfsRequest.getDefaultInstance()))
                    .hasMessageContaining("UNIMPLEMENTED: This server does not implement empirical distribution");
        }
    }

    @Test
    void anotherEnvironmentSeesNoneOfItAndCannotTouchIt() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            DatasetMeta mine = upload(api, "secret-table", write("s.csv", "k\nv\n"));
            String revisionId = revisionId(mine.getMostRecentRevision());
            UploadSession open = uploadFiles(api, write("t.csv", "k\nw\n"));
            ManagedChannel other = RunningServer.authenticated(server.server, "other-env");
            try {
                var theirs = api(other);
                assertThat(theirs.listDatasets(ListDatasetsRequest.getDefaultInstance())
                                .getDatasetsList())
                        .isEmpty();
                for (Runnable attempt : List.<Runnable>of(
                        () -> theirs.getDataset(GetDatasetRequest.newBuilder()
                                .setId(mine.getId())
                                .build()),
                        () -> theirs.getDataset(GetDatasetRequest.newBuilder()
                                .setId("secret-table")
                                .build()),
                        () -> theirs.getDatasetRevision(GetDatasetRevisionRequest.newBuilder()
                                .setRevisionId(revisionId)
                                .setIncludeArchived(true)
                                .build()),
                        () -> theirs.getDatasetRevisionDownloadLinks(GetDatasetRevisionDownloadLinksRequest.newBuilder()
                                .setRevisionId(revisionId)
                                .build()),
                        () -> theirs.getDatasetRevisionPreview(GetDatasetRevisionPreviewRequest.newBuilder()
                                .setRevisionId(revisionId)
                                .build()),
                        () -> theirs.deleteDataset(DeleteDatasetRequest.newBuilder()
                                .setDatasetId(mine.getId())
                                .build()),
                        () -> theirs.archiveDatasetRevision(ArchiveDatasetRevisionRequest.newBuilder()
                                .setRevisionId(revisionId)
                                .build()),
                        () -> theirs.getDatasetUploadUris(GetDatasetUploadUrisRequest.newBuilder()
                                .setContentSize(1)
                                .setUploadSessionId(open.sessionId)
                                .build()),
                        () -> open.finalize(theirs, "stolen"))) {
                    assertThatThrownBy(attempt::run)
                            .isInstanceOfSatisfying(
                                    StatusRuntimeException.class,
                                    e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
                }
                // the same name in another environment is another dataset
                DatasetMeta theirsNamed = upload(theirs, "secret-table", write("u.csv", "k\nmine\n"));
                assertThat(theirsNamed.getId()).isNotEqualTo(mine.getId());
                assertThat(api.getDataset(GetDatasetRequest.newBuilder()
                                        .setId("secret-table")
                                        .build())
                                .getDataset()
                                .getNumRevisions())
                        .isEqualTo(1);
            } finally {
                other.shutdownNow();
            }
        }
    }

    @Test
    void anUploadARestartInterruptsFailsWithAMessageAndIsNeverVisible() throws Exception {
        UploadSession session;
        byte[] bytes = "id,name\n1,a\n2,b\n".repeat(1000).getBytes(StandardCharsets.UTF_8);
        String url;
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            GetDatasetUploadUrisResponse uri = api.getDatasetUploadUris(GetDatasetUploadUrisRequest.newBuilder()
                    .setContentSize(bytes.length)
                    .build());
            session = new UploadSession(uri.getUploadSessionId(), List.of(uri.getStorageObjectId()));
            url = uri.getDirect().getSignedUploadUri();
            URI u = URI.create(url);
            // half the body, then the server stops under the transfer
            try (Socket socket = new Socket(u.getHost(), u.getPort())) {
                OutputStream out = socket.getOutputStream();
                out.write(("PUT " + u.getRawPath() + "?" + u.getRawQuery() + " HTTP/1.1\r\nHost: " + u.getHost()
                                + "\r\nContent-Length: " + bytes.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(bytes, 0, bytes.length / 2);
                out.flush();
                Thread.sleep(300);
                server.close();
            }
        }
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            assertThatThrownBy(() -> session.finalize(api, "interrupted"))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription())
                                .contains("the server restarted while this upload session was open")
                                .contains("upload them again");
                    });
            // the restarted server listens on another free port; the link (path and signature) is the same
            URI old = URI.create(url);
            HttpResponse<String> late = http.send(
                    HttpRequest.newBuilder(
                                    URI.create(server.server.httpUrl() + old.getRawPath() + "?" + old.getRawQuery()))
                            .PUT(HttpRequest.BodyPublishers.ofByteArray(bytes))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(late.statusCode()).isEqualTo(409);
            assertThat(late.body()).contains("FAILED");
            assertThat(api.listDatasets(ListDatasetsRequest.getDefaultInstance())
                            .getDatasetsList())
                    .isEmpty();
            try (var incoming = Files.list(dataDir.resolve("blobs").resolve("incoming"))) {
                assertThat(incoming).isEmpty();
            }
        }
    }

    @Test
    void aRevisionARestartCaughtWhileFinalizingIsFailedWithAMessage() throws Exception {
        Files.createDirectories(dataDir);
        String revisionId = "6f1c3c2e-0000-4000-8000-000000000001";
        try (Database db = Database.open(dataDir)) {
            DatasetStore store = new DatasetStore(db);
            store.openSession("default", "session-1", Instant.now());
            store.addObject("session-1", "object-1", 1, null, 10);
            store.objectUploaded("object-1", "a".repeat(64));
            store.beginRevision("default", "session-1", "half-done", "dataset-1", revisionId, Instant.now());
        }
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            DatasetRevisionMeta revision = api.getDatasetRevision(GetDatasetRevisionRequest.newBuilder()
                            .setRevisionId(revisionId)
                            .build())
                    .getRevision();
            assertThat(revision.getStatus()).isEqualTo(DatasetRevisionStatus.DATASET_REVISION_STATUS_FAILED);
            assertThat(revision.getMetadata()
                            .getStructValue()
                            .getFieldsMap()
                            .get("error")
                            .getStringValue())
                    .contains("the server restarted while this revision was being finalized");
            assertThat(revision.getNumShards()).isZero();
            assertThatThrownBy(() ->
                            api.getDatasetRevisionDownloadLinks(GetDatasetRevisionDownloadLinksRequest.newBuilder()
                                    .setRevisionId(revisionId)
                                    .build()))
                    .hasMessageContaining("FAILED_PRECONDITION")
                    .hasMessageContaining("only a COMPLETED revision has files");
        }
    }

    @Test
    void revisionsSurviveARestart() throws Exception {
        String revisionId;
        try (RunningServer server = RunningServer.start(dataDir)) {
            revisionId = revisionId(upload(api(server.channel), "kept", write("k.csv", "n\n1\n2\n"))
                    .getMostRecentRevision());
        }
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            assertThat(api.getDatasetRevision(GetDatasetRevisionRequest.newBuilder()
                                    .setRevisionId(revisionId)
                                    .build())
                            .getRevision()
                            .getNumRows())
                    .isEqualTo(2);
            String link = api.getDatasetRevisionDownloadLinks(GetDatasetRevisionDownloadLinksRequest.newBuilder()
                            .setRevisionId(revisionId)
                            .build())
                    .getOutputUrls(0);
            Path down = files.resolve("kept.parquet");
            http.send(HttpRequest.newBuilder(URI.create(link)).build(), HttpResponse.BodyHandlers.ofFile(down));
            assertThat(duck("SELECT sum(n)::VARCHAR FROM read_parquet('" + down + "')"))
                    .isEqualTo("3");
        }
    }

    /**
     * A dataset file PUT through its signed link counts against its environment's blob storage: past it, the PUT is
     * answered 507 saying so and nothing is kept, while another environment uploads on.
     */
    @Test
    void anUploadPastItsEnvironmentsBlobStorageIs507AndAnotherEnvironmentUploadsOn() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.blobStoragePerEnvironment(3L << 20))) {
            String row = "x".repeat(1023) + "\n";
            Path first = write("first.csv", "text\n" + row.repeat(2048));
            Path second = write("second.csv", "text\n" + row.repeat(2047) + "y".repeat(1023) + "\n");
            uploadFiles(api(server.channel), first);
            HttpResponse<String> put = put(
                    api(server.channel)
                            .getDatasetUploadUris(GetDatasetUploadUrisRequest.newBuilder()
                                    .setContentSize(Files.size(second))
                                    .build()),
                    second);
            assertThat(put.statusCode()).isEqualTo(507);
            assertThat(put.body()).contains("this environment's blobs", "limit of 3 MiB", "it stores 2 MiB");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                assertThat(uploadFiles(api(prod), second).objectIds()).hasSize(1);
            } finally {
                prod.shutdownNow();
            }
        }
    }

    @Test
    void aBlobCollectionKeepsARevisionsFilesUntilItsDatasetIsDeleted() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = api(server.channel);
            Path csv = write("kept.csv", "sku,price\nsku-1,9.5\nsku-2,12.25\n");
            DatasetMeta dataset = upload(api, "kept", csv);
            String revisionId = revisionId(dataset.getMostRecentRevision());
            Thread.sleep(5); // the cutoff after every use, even on a coarse clock

            var collected = server.server.collectBlobs(java.time.Instant.now());

            // the CSV as uploaded, which nothing refers to once converted, goes; the revision's Parquet file stays
            assertThat(collected.released()).isEqualTo(1);
            assertThat(collected.deleted()).isEqualTo(1);
            assertThat(collected.deletedBytes()).isEqualTo(Files.size(csv));
            List<String> links = api.getDatasetRevisionDownloadLinks(GetDatasetRevisionDownloadLinksRequest.newBuilder()
                            .setRevisionId(revisionId)
                            .build())
                    .getOutputUrlsList();
            Path downloaded = files.resolve("kept.parquet");
            assertThat(http.send(
                                    HttpRequest.newBuilder(URI.create(links.get(0)))
                                            .build(),
                                    HttpResponse.BodyHandlers.ofFile(downloaded))
                            .statusCode())
                    .isEqualTo(200);
            assertThat(duck("SELECT string_agg(sku || '=' || price, ',' ORDER BY sku) FROM read_parquet('" + downloaded
                            + "')"))
                    .isEqualTo("sku-1=9.5,sku-2=12.25");

            // deleting the dataset frees its bytes
            api.deleteDataset(DeleteDatasetRequest.newBuilder()
                    .setDatasetId(dataset.getId())
                    .build());
            Thread.sleep(5);
            collected = server.server.collectBlobs(java.time.Instant.now());
            assertThat(collected.released()).isEqualTo(1);
            assertThat(collected.deleted()).isEqualTo(1);
            assertThat(collected.deletedBytes()).isEqualTo(Files.size(downloaded));
        }
    }

    // -------------------------------------------------------------------------------------------------------------

    /** An upload session and its objects, in order. */
    private record UploadSession(String sessionId, List<String> objectIds) {
        DatasetMeta finalize(DatasetMetadataServiceBlockingStub api, String name) {
            return api.finalizeDatasetUpload(FinalizeDatasetUploadRequest.newBuilder()
                            .setUploadSessionId(sessionId)
                            .setDatasetName(name)
                            .build())
                    .getDataset();
        }
    }

    private UploadSession uploadFiles(DatasetMetadataServiceBlockingStub api, Path... paths) throws Exception {
        String session = null;
        List<String> objects = new ArrayList<>();
        for (Path p : paths) {
            GetDatasetUploadUrisRequest.Builder request =
                    GetDatasetUploadUrisRequest.newBuilder().setContentSize(Files.size(p));
            if (session != null) {
                request.setUploadSessionId(session);
            }
            GetDatasetUploadUrisResponse uri = api.getDatasetUploadUris(request.build());
            session = uri.getUploadSessionId();
            objects.add(uri.getStorageObjectId());
            HttpResponse<String> put = put(uri, p);
            assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        }
        return new UploadSession(session, objects);
    }

    /** PUTs {@code file} to the signed upload link of {@code uri}. */
    private HttpResponse<String> put(GetDatasetUploadUrisResponse uri, Path file) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create(uri.getDirect().getSignedUploadUri()))
                        .PUT(HttpRequest.BodyPublishers.ofFile(file))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private DatasetMeta upload(DatasetMetadataServiceBlockingStub api, String name, Path... paths) throws Exception {
        return uploadFiles(api, paths).finalize(api, name);
    }

    private static String revisionId(DatasetRevisionMeta r) {
        return r.getMetadata()
                .getStructValue()
                .getFieldsMap()
                .get("revision_id")
                .getStringValue();
    }

    private Path write(String name, String text) throws Exception {
        return Files.writeString(files.resolve(name), text);
    }

    private Path parquet(String name, String select) throws Exception {
        Path p = files.resolve(name);
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (" + select + ") TO '" + p + "' (FORMAT parquet)");
        }
        return p;
    }

    private static String duck(String sql) throws Exception {
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }
}
