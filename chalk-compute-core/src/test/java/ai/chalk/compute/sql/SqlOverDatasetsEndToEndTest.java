package ai.chalk.compute.sql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.connection.ConnectionSettings;
import ai.chalk.compute.error.ChalkComputeException;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a user does, against a standalone server over TCP: two CSVs uploaded as two revisions of one dataset through
 * the wire contract, the latest queried with SQLClient, the first by its revision id, a persisted job awaited and its
 * shards downloaded and read back with DuckDB, and the server's own files out of reach.
 */
class SqlOverDatasetsEndToEndTest {

    @TempDir
    Path dir;

    @Test
    void uploadTwiceQueryTheLatestSubmitDownloadAndReadBack() throws Exception {
        Path first = Files.writeString(dir.resolve("v1.csv"), "question,answer\nhi,hello\n");
        Path second = Files.writeString(dir.resolve("v2.csv"), "question,answer\nhi,hello\nbye,goodbye\nok,fine\n");
        try (ComputeServer server = ComputeServer.builder()
                        .dataDir(dir.resolve("data"))
                        .port(0)
                        .auth(Authentication.Mode.NONE)
                        .build()
                        .start();
                SQLClient sql = SQLClient.connect(ConnectionSettings.forTarget(
                        "127.0.0.1:" + server.port().getAsInt()))) {
            ManagedChannel channel = ConnectionSettings.forTarget(
                            "127.0.0.1:" + server.port().getAsInt())
                    .openChannel();
            try {
                DatasetUploads uploads = new DatasetUploads(channel);
                String firstRevision = uploads.upload("support_examples", first);
                uploads.upload("support_examples", second);

                assertThat(sql.query("SELECT count(*) AS n FROM chalk.datasets.support_examples")
                                .rows())
                        .containsExactly(Map.of("n", 3L));
                assertThat(sql.query("SELECT answer FROM chalk.dataset_revisions.\"" + firstRevision + "\"")
                                .rows())
                        .containsExactly(Map.of("answer", "hello"));

                // the catalog (an Arrow schema only when the upload declared one: CSV uploads have none recorded)
                var tables = ai.chalk.compute.proto.protosql.v1.SqlServiceGrpc.newBlockingStub(channel)
                        .getTables(ai.chalk.compute.proto.protosql.v1.GetTablesRequest.newBuilder()
                                .setIncludeSchemas(true)
                                .setDbSchemaFilterPattern("datasets")
                                .build())
                        .getTablesList();
                assertThat(tables)
                        .singleElement()
                        .satisfies(
                                t -> assertThat(t.getCatalogName() + "." + t.getDbSchemaName() + "." + t.getTableName())
                                        .isEqualTo("chalk.datasets.support_examples"));

                SqlJob job = sql.submit("SELECT * FROM chalk.datasets.support_examples ORDER BY question", "batch");
                List<Path> shards = job.await(Duration.ofMinutes(1)).download(dir.resolve("results"));
                try (var c = DriverManager.getConnection("jdbc:duckdb:");
                        var rs = c.createStatement()
                                .executeQuery("SELECT string_agg(answer, ',' ORDER BY question) FROM read_parquet('"
                                        + dir.resolve("results") + "/*.parquet')")) {
                    rs.next();
                    assertThat(rs.getString(1)).isEqualTo("goodbye,hello,fine");
                }
                assertThat(shards).isNotEmpty();

                // the server's own database and blobs are files like any other: out of reach
                for (String attack : List.of(
                        "SELECT * FROM glob('" + dir.resolve("data") + "/**')",
                        "SELECT * FROM read_blob('" + dir.resolve("data/state") + "/*')",
                        "SELECT * FROM read_parquet('" + dir.resolve("data/blobs") + "/**/*')")) {
                    assertThatThrownBy(() -> sql.query(attack))
                            .isInstanceOf(ChalkComputeException.class)
                            .hasMessageContaining("file system operations are disabled");
                }
            } finally {
                channel.shutdownNow();
            }
        }
    }
}
