package ai.chalk.compute.server.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionDownloadLinksRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetRevisionDownloadLinksResponse;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisResponse;
import io.grpc.ManagedChannel;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Datasets on the standalone server: links on the {@code --http-port} it was given, living {@code --transfer-link-ttl},
 * uploaded and downloaded with curl as a user would.
 */
class StandaloneDatasetTest {

    @Test
    void curlUploadsAndDownloadsThroughTheLinksOfTheGivenHttpPort(@TempDir Path dataDir, @TempDir Path files)
            throws Exception {
        int httpPort;
        try (ServerSocket probe = new ServerSocket(0)) {
            httpPort = probe.getLocalPort();
        }
        StandaloneServerTest.ServerProcess server = StandaloneServerTest.launch(
                dataDir, "--http-port", Integer.toString(httpPort), "--transfer-link-ttl", "PT10M");
        ManagedChannel channel = server.channel();
        try {
            var api = DatasetMetadataServiceGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
            Path csv = Files.writeString(files.resolve("visits.csv"), "page,visits\n/home,120\n/about,7\n");
            GetDatasetUploadUrisResponse uri = api.getDatasetUploadUris(GetDatasetUploadUrisRequest.newBuilder()
                    .setContentSize(Files.size(csv))
                    .build());
            String upload = uri.getDirect().getSignedUploadUri();
            assertThat(URI.create(upload).getPort()).isEqualTo(httpPort);
            assertThat(curl("-s", "-f", "-T", csv.toString(), upload)).contains("stored");
            String revision = api.finalizeDatasetUpload(FinalizeDatasetUploadRequest.newBuilder()
                            .setUploadSessionId(uri.getUploadSessionId())
                            .setDatasetName("visits")
                            .build())
                    .getDataset()
                    .getMostRecentRevision()
                    .getMetadata()
                    .getStructValue()
                    .getFieldsMap()
                    .get("revision_id")
                    .getStringValue();

            GetDatasetRevisionDownloadLinksResponse links =
                    api.getDatasetRevisionDownloadLinks(GetDatasetRevisionDownloadLinksRequest.newBuilder()
                            .setRevisionId(revision)
                            .build());
            Instant expiry = Instant.ofEpochSecond(links.getExpiration().getSeconds());
            assertThat(expiry)
                    .isBetween(Instant.now().plusSeconds(500), Instant.now().plusSeconds(700));
            String link = links.getOutputUrls(0);
            Path whole = files.resolve("visits.parquet");
            curl("-s", "-f", "-o", whole.toString(), link);
            assertThat(new String(Files.readAllBytes(whole), 0, 4, StandardCharsets.US_ASCII))
                    .isEqualTo("PAR1");
            try (var c = DriverManager.getConnection("jdbc:duckdb:");
                    ResultSet rs =
                            c.createStatement().executeQuery("SELECT sum(visits) FROM read_parquet('" + whole + "')")) {
                rs.next();
                assertThat(rs.getLong(1)).isEqualTo(127);
            }
            // the last four bytes of a Parquet file are its magic again
            assertThat(curl("-s", "-f", "-H", "Range: bytes=-4", link)).isEqualTo("PAR1");
            assertThat(curl(
                            "-s",
                            "-o",
                            "/dev/null",
                            "-w",
                            "%{http_code}",
                            link.replace("X-Chalk-Expires=", "X-Chalk-Expires=1")))
                    .isEqualTo("403");
        } finally {
            channel.shutdownNow();
            server.process().destroy();
            server.process().waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static String curl(String... args) throws Exception {
        String[] command = new String[args.length + 1];
        command[0] = "curl";
        System.arraycopy(args, 0, command, 1, args.length);
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }
}
