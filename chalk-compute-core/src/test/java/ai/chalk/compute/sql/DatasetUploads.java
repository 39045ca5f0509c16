package ai.chalk.compute.sql;

import ai.chalk.compute.proto.server.v1.DatasetMetadataServiceGrpc;
import ai.chalk.compute.proto.server.v1.FinalizeDatasetUploadRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisRequest;
import ai.chalk.compute.proto.server.v1.GetDatasetUploadUrisResponse;
import io.grpc.Channel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Uploads files as a dataset revision through Chalk's wire contract, as an independent client does: upload links
 * from {@code DatasetMetadataService}, a plain HTTP PUT of each file, then finalize.
 */
final class DatasetUploads {

    private final DatasetMetadataServiceGrpc.DatasetMetadataServiceBlockingStub api;
    private final HttpClient http = HttpClient.newHttpClient();

    DatasetUploads(Channel channel) {
        this.api = DatasetMetadataServiceGrpc.newBlockingStub(channel);
    }

    /** Uploads {@code files} (CSV or Parquet) as a new revision of {@code name}; returns the revision id. */
    String upload(String name, Path... files) throws Exception {
        String session = null;
        for (Path file : files) {
            GetDatasetUploadUrisRequest.Builder request =
                    GetDatasetUploadUrisRequest.newBuilder().setContentSize(Files.size(file));
            if (session != null) {
                request.setUploadSessionId(session);
            }
            GetDatasetUploadUrisResponse links = api.getDatasetUploadUris(request.build());
            session = links.getUploadSessionId();
            HttpResponse<String> put = http.send(
                    HttpRequest.newBuilder(URI.create(links.getDirect().getSignedUploadUri()))
                            .PUT(HttpRequest.BodyPublishers.ofFile(file))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            if (put.statusCode() != 200) {
                throw new IllegalStateException("upload of " + file + " refused: " + put.body());
            }
        }
        var dataset = api.finalizeDatasetUpload(FinalizeDatasetUploadRequest.newBuilder()
                        .setUploadSessionId(session)
                        .setDatasetName(name)
                        .build())
                .getDataset();
        return dataset.getMostRecentRevision()
                .getMetadata()
                .getStructValue()
                .getFieldsMap()
                .get("revision_id")
                .getStringValue();
    }
}
