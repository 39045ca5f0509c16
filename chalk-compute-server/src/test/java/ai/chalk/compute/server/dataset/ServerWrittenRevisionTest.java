package ai.chalk.compute.server.dataset;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.server.v1.DatasetMeta;
import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetDatasetRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.dataset.DatasetManager.ReadableRevision;
import ai.chalk.compute.server.dataset.DatasetManager.Written;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.store.DatasetStore.DatasetColumn;
import ai.chalk.compute.server.store.DatasetStore.RevisionStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Parquet file the server writes (an evaluation run's result) stored as a revision: listed over TCP like an upload,
 * readable by the server's readers, in its environment only, and still there after a restart.
 */
@Tag("alone")
class ServerWrittenRevisionTest {

    @TempDir
    Path dir;

    @Test
    void aServerWrittenFileIsACompletedRevisionOfItsEnvironment() throws Exception {
        Path result = dir.resolve("result.parquet");
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (SELECT * FROM (VALUES ('2+2', '4', 1.0, '{\"distance\":0}', NULL),"
                    + " ('capital', 'Lyon', 0.0, '{\"distance\":5}', NULL),"
                    + " ('boom', NULL, 0.0, '{}', 'the task threw: boom'))"
                    + " t(question, output, exact_match_score, exact_match_metadata, error)) TO '" + result
                    + "' (FORMAT parquet)");
        }
        Path data = dir.resolve("data");
        Written written;
        try (RunningServer server = RunningServer.start(data)) {
            DatasetManager datasets = server.server.datasets();
            written = datasets.storeParquet("default", "qa-eval-results", result);
            Files.delete(result); // the revision holds its own copy

            DatasetMeta meta = DatasetMetadataServiceGrpc.newBlockingStub(server.channel)
                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                    .getDataset(GetDatasetRequest.newBuilder()
                            .setId("qa-eval-results")
                            .build())
                    .getDataset();
            assertThat(meta.getId()).isEqualTo(written.dataset().id());
            assertThat(meta.getMostRecentRevision().getNumRows()).isEqualTo(3);

            assertThat(datasets.latestReadable("other-env", "qa-eval-results")).isEmpty();
            Written second = datasets.storeParquet("default", "qa-eval-results", write(dir.resolve("r2.parquet")));
            assertThat(second.dataset().id()).isEqualTo(written.dataset().id());
            assertThat(second.revisionId()).isNotEqualTo(written.revisionId());
        }
        try (RunningServer server = RunningServer.start(data)) {
            ReadableRevision r = server.server.datasets().readableRevision("default", written.revisionId());
            assertThat(r.numRows()).isEqualTo(3);
            assertThat(r.columns().stream().map(DatasetColumn::name).collect(Collectors.joining(",")))
                    .isEqualTo("question,output,exact_match_score,exact_match_metadata,error");
            try (var c = DriverManager.getConnection("jdbc:duckdb:");
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT avg(exact_match_score), count(error) FROM read_parquet('"
                            + r.files().get(0) + "')")) {
                rs.next();
                assertThat(rs.getDouble(1)).isEqualTo(1.0 / 3);
                assertThat(rs.getLong(2)).isEqualTo(1);
            }
        }
    }

    /**
     * A file the server writes when its disk has less free than it keeps is refused with RESOURCE_EXHAUSTED saying so,
     * as an upload is (it was UNAVAILABLE, which a caller retries); the revision is FAILED with the reason.
     */
    @Test
    void aServerWrittenFileOnAFullDiskIsResourceExhausted() throws Exception {
        Path data = dir.resolve("data");
        Files.createDirectories(data);
        long reserve = Files.getFileStore(data).getUsableSpace() + (1L << 30);
        try (RunningServer server = RunningServer.start(data, b -> b.diskReserve(reserve))) {
            assertThatThrownBy(() -> server.server
                            .datasets()
                            .storeParquet("default", "full-disk-results", write(dir.resolve("r.parquet"))))
                    .isInstanceOfSatisfying(ComputeException.class, e -> {
                        assertThat(e.kind()).isEqualTo(ComputeException.Kind.EXHAUSTED);
                        assertThat(e.getMessage()).contains("FAILED").contains("MiB free and keeps");
                        var id = java.util.regex.Pattern.compile("revision (\\S+) of dataset")
                                .matcher(e.getMessage());
                        assertThat(id.find()).isTrue();
                        var revision = server.server.datasets().revision("default", id.group(1), true);
                        assertThat(revision.status()).isEqualTo(RevisionStatus.FAILED);
                        assertThat(revision.message()).contains("MiB free and keeps");
                    });
        }
    }

    private static Path write(Path p) throws Exception {
        try (var c = DriverManager.getConnection("jdbc:duckdb:");
                Statement s = c.createStatement()) {
            s.execute("COPY (SELECT 1 AS n) TO '" + p + "' (FORMAT parquet)");
        }
        return p;
    }
}
