package ai.chalk.compute.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.error.DatasetNotFoundException;
import ai.chalk.compute.error.InvalidRequestException;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link DatasetClient} against a real server (in-process and over TCP), real Parquet and HTTP over loopback. */
class DatasetClientTest {

    @TempDir
    Path dataDir;

    @TempDir
    Path work;

    @Test
    void csvFilesUploadAsOneRevisionAndDownloadAsParquetThatNeverOverwrites() throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            DatasetClient datasets = client.datasets();
            Path jan = write("jan.csv", "order_id,amount,day\n1,10.5,2026-01-03\n2,7.25,2026-01-09\n");
            Path feb = write("feb.csv", "order_id,amount,day\n3,99.0,2026-02-01\n");
            Dataset orders = datasets.upload("orders", jan, feb);
            assertThat(orders.name()).isEqualTo("orders");
            assertThat(orders.status()).isEqualTo(DatasetStatus.COMPLETED);
            assertThat(orders.rows()).isEqualTo(3);
            assertThat(orders.latest().orElseThrow().files()).isEqualTo(2);
            assertThat(orders.latest().orElseThrow().columns())
                    .containsExactly(
                            new DatasetColumn("order_id", "BIGINT"),
                            new DatasetColumn("amount", "DOUBLE"),
                            new DatasetColumn("day", "DATE"));

            assertThat(datasets.get("orders").revisionId()).isEqualTo(orders.revisionId());
            assertThat(datasets.list()).extracting(Dataset::name).containsExactly("orders");

            DatasetPreview preview = datasets.preview(orders.revisionId());
            assertThat(preview.rows()).hasSize(3);
            assertThat(preview.rows().get(0)).containsEntry("order_id", 1.0).containsEntry("day", "2026-01-03");
            assertThat(preview.columns())
                    .extracting(c -> c.get("column_name"))
                    .containsExactly("order_id", "amount", "day");

            Path out = work.resolve("out");
            List<Path> parts = datasets.download(orders.revisionId(), out);
            assertThat(parts).hasSize(2).allSatisfy(p -> assertThat(p).startsWith(out));
            assertThat(duck("SELECT sum(amount)::VARCHAR || '/' || count(*) FROM read_parquet(['" + parts.get(0)
                            + "', '" + parts.get(1) + "'])"))
                    .isEqualTo("116.75/3");
            try (var listing = Files.list(out)) {
                assertThat(listing).hasSize(2); // no partial files left beside them
            }

            byte[] before = Files.readAllBytes(parts.get(1));
            Files.delete(parts.get(0)); // one file is missing, the other would be overwritten
            assertThatThrownBy(() -> datasets.download(orders.revisionId(), out))
                    .isInstanceOf(UncheckedIOException.class)
                    .hasCauseInstanceOf(FileAlreadyExistsException.class)
                    .hasMessageContaining(parts.get(1).toString())
                    .hasMessageContaining("does not overwrite");
            assertThat(parts.get(0)).doesNotExist();
            assertThat(Files.readAllBytes(parts.get(1))).isEqualTo(before);
        }
    }

    @Test
    void rowsColumnsAndArrowUploadWithTheirTypesAndEachUploadIsANewRevision() throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            DatasetClient datasets = client.datasets();
            Map<String, Object> first = new LinkedHashMap<>();
            first.put("id", 1);
            first.put("score", 0.75);
            first.put("label", "good");
            first.put("seen", LocalDate.of(2026, 12, 1));
            first.put("ok", true);
            Map<String, Object> second = new LinkedHashMap<>();
            second.put("id", 2);
            second.put("score", 0.5);
            second.put("label", null);
            second.put("seen", LocalDate.of(2026, 12, 2));
            second.put("ok", false);
            Dataset fromRows = datasets.upload("scores", List.of(first, second));
            assertThat(fromRows.latest().orElseThrow().columns())
                    .containsExactly(
                            new DatasetColumn("id", "BIGINT"),
                            new DatasetColumn("score", "DOUBLE"),
                            new DatasetColumn("label", "VARCHAR"),
                            new DatasetColumn("seen", "DATE"),
                            new DatasetColumn("ok", "BOOLEAN"));

            Map<String, List<?>> columns = new LinkedHashMap<>();
            columns.put("id", List.of(3, 4, 5));
            columns.put("score", List.of(0.1, 0.2, 0.3));
            columns.put("label", List.of("a", "b", "c"));
            columns.put("seen", List.of(LocalDate.of(2026, 1, 1), LocalDate.of(2026, 1, 2), LocalDate.of(2026, 1, 3)));
            columns.put("ok", List.of(true, true, false));
            Dataset fromColumns = datasets.uploadColumns("scores", columns);
            assertThat(fromColumns.id()).isEqualTo(fromRows.id());
            assertThat(fromColumns.revisions()).isEqualTo(2);
            assertThat(fromColumns.rows()).isEqualTo(3);

            try (BufferAllocator allocator = new RootAllocator();
                    BigIntVector id = new BigIntVector("id", allocator);
                    Float8Vector score = new Float8Vector("score", allocator);
                    VarCharVector label = new VarCharVector("label", allocator)) {
                id.allocateNew(2);
                score.allocateNew(2);
                label.allocateNew(2);
                id.set(0, 10);
                id.set(1, 11);
                score.set(0, 1.5);
                score.setNull(1);
                label.set(0, "x".getBytes(StandardCharsets.UTF_8));
                label.set(1, "y".getBytes(StandardCharsets.UTF_8));
                try (VectorSchemaRoot root = VectorSchemaRoot.of(id, score, label)) {
                    root.setRowCount(2);
                    Dataset fromArrow = datasets.upload("arrow-scores", root);
                    assertThat(fromArrow.rows()).isEqualTo(2);
                    assertThat(fromArrow.latest().orElseThrow().columns())
                            .containsExactly(
                                    new DatasetColumn("id", "BIGINT"),
                                    new DatasetColumn("score", "DOUBLE"),
                                    new DatasetColumn("label", "VARCHAR"));
                    assertThat(datasets.preview(fromArrow.revisionId()).rows().get(1))
                            .containsEntry("score", null)
                            .containsEntry("label", "y");
                }
            }

            List<DatasetRevision> revisions = datasets.revisions("scores");
            assertThat(revisions).extracting(DatasetRevision::rows).containsExactly(3L, 2L);
            assertThat(revisions.get(0).numericId())
                    .isGreaterThan(revisions.get(1).numericId());
            assertThatThrownBy(() -> datasets.upload("bad", List.of(Map.of("x", new Object()))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("column \"x\" holds a java.lang.Object");
        }
    }

    @Test
    void aSchemaMismatchNamesTheFilesByTheirPathsAndTheColumn() throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            Path a = write("a.csv", "id,price\n1,2.5\n");
            Path b = write("b.csv", "id,price,currency\n2,3.5,EUR\n");
            assertThatThrownBy(() -> client.datasets().upload("prices", a, b))
                    .isInstanceOf(InvalidRequestException.class)
                    .hasMessageContaining(b + " has column \"currency\" that " + a + " lacks")
                    .hasMessageNotContaining("storage object");
            assertThatThrownBy(() -> client.datasets().get("prices")).isInstanceOf(DatasetNotFoundException.class);
        }
    }

    @Test
    void renameArchiveAndDeleteThroughTheClient() throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            DatasetClient datasets = client.datasets();
            Dataset v1 = datasets.upload("draft", write("1.csv", "n\n1\n"));
            Dataset v2 = datasets.upload("draft", write("2.csv", "n\n2\n"));
            assertThat(datasets.rename("draft", "final").name()).isEqualTo("final");
            assertThat(datasets.archive(v2.revisionId()).archivedAt()).isPresent();
            assertThat(datasets.get("final").revisionId()).isEqualTo(v1.revisionId());
            assertThat(datasets.revision(v2.revisionId()).archivedAt()).isPresent();
            datasets.delete("final");
            assertThatThrownBy(() -> datasets.get("final"))
                    .isInstanceOf(DatasetNotFoundException.class)
                    .hasMessageContaining("dataset final does not exist");
            assertThatThrownBy(() -> datasets.download(v1.revisionId(), work.resolve("gone")))
                    .isInstanceOf(DatasetNotFoundException.class);
        }
    }

    @Test
    void overTcpAnExpiredLinkIsRefusedAndTheClientDownloadsThroughAFreshOne() throws Exception {
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dataDir)
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .transferLinkTtl(Duration.ofSeconds(1))
                        .build()
                        .start();
                SandboxClient client =
                        SandboxClient.connect("127.0.0.1:" + server.port().orElseThrow())) {
            DatasetClient datasets = client.datasets();
            List<Path> files = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                files.add(write("part" + i + ".csv", "k,v\n" + i + ",value " + i + "\n"));
            }
            Dataset d = datasets.upload("expiring", files.toArray(Path[]::new));
            List<String> stale = datasets.links(d.revisionId());
            Thread.sleep(2100);
            HttpResponse<String> refused = HttpClient.newHttpClient()
                    .send(
                            HttpRequest.newBuilder(URI.create(stale.get(0))).build(),
                            HttpResponse.BodyHandlers.ofString());
            assertThat(refused.statusCode()).isEqualTo(403);
            assertThat(refused.body()).contains("this link expired at");

            List<Path> parts = datasets.download(d.revisionId(), work.resolve("fresh"), stale);
            assertThat(parts).hasSize(3);
            assertThat(duck("SELECT string_agg(v, ',' ORDER BY k) FROM read_parquet(['" + parts.get(0) + "', '"
                            + parts.get(1) + "', '" + parts.get(2) + "'])"))
                    .isEqualTo("value 0,value 1,value 2");
        }
    }

    @Test
    void anUnknownRevisionAndABadNameAreRefusedWithTheirOwnExceptions() throws Exception {
        try (ComputeServer server =
                        ComputeServer.builder().dataDir(dataDir).build().start();
                SandboxClient client = SandboxClient.inProcess(server.inProcessName())) {
            assertThatThrownBy(() -> client.datasets().download("no-such-revision", work))
                    .isInstanceOf(DatasetNotFoundException.class);
            assertThatThrownBy(() -> client.datasets().upload("bad name!", write("x.csv", "a\n1\n")))
                    .isInstanceOf(InvalidRequestException.class)
                    .hasMessageContaining("dataset name \"bad name!\" is not valid");
        }
    }

    private Path write(String name, String text) throws Exception {
        return Files.writeString(work.resolve(name), text);
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
