package ai.chalk.compute.server.blob;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.server.RunningServer;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each environment's blobs count against its blob storage ({@code --blob-storage-per-environment}), over TCP against a
 * real server with two environments. Without it, one tenant's code, datasets and query results
 * could fill the disk down to its reserve, after which every tenant's uploads were refused.
 */
class BlobStorageLimitTest {

    @TempDir
    Path dataDir;

    @Test
    void anEnvironmentPastItsBlobStorageIsRefusedWhileAnotherStoresOnAcrossRestarts() throws Exception {
        byte[] first = BlobUploads.random(2 << 20, 1);
        byte[] second = BlobUploads.random(2 << 20, 2);
        try (RunningServer server = RunningServer.start(dataDir, b -> b.blobStoragePerEnvironment(3L << 20))) {
            ManagedChannel dev = server.channel;
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                assertThat(BlobUploads.stored(dev, first)).isTrue();
                Status refused = BlobUploads.refusal(dev, second);
                assertThat(refused.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(refused.getDescription())
                        .contains(
                                "this environment's blobs",
                                "limit of 3 MiB",
                                "it stores 2 MiB",
                                "this one is 2097152 bytes",
                                "--blob-storage-per-environment");
                assertThat(BlobServiceGrpc.newBlockingStub(dev)
                                .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                        .addBlobs(BlobUploads.ref(second))
                                        .build())
                                .getMissingCount())
                        .isOne();
                try (var incoming = Files.list(dataDir.resolve("blobs").resolve("incoming"))) {
                    assertThat(incoming).isEmpty();
                }
                // another environment's storage is its own; the bytes dev stored count in full for it too
                assertThat(BlobUploads.stored(prod, second)).isTrue();
                assertThat(BlobUploads.refusal(prod, first).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            } finally {
                prod.shutdownNow();
            }
        }
        try (RunningServer server = RunningServer.start(dataDir, b -> b.blobStoragePerEnvironment(3L << 20))) {
            // an upload written in full and held open counts until it ends: each would otherwise pass the check
            byte[] third = BlobUploads.random(1 << 20, 4);
            BlobUploads.Open held = BlobUploads.open(server.channel, BlobUploads.ref(third));
            held.requests()
                    .onNext(ai.chalk.compute.proto.blob.v1.UploadBlobRequest.newBuilder()
                            .setData(com.google.protobuf.ByteString.copyFrom(third))
                            .build());
            org.awaitility.Awaitility.await()
                    .atMost(java.time.Duration.ofSeconds(30))
                    .until(() -> {
                        try (var incoming = Files.list(dataDir.resolve("blobs").resolve("incoming"))) {
                            return incoming.anyMatch(f -> f.toFile().length() == third.length);
                        }
                    });
            assertThat(BlobUploads.refusal(server.channel, BlobUploads.random(1 << 20, 5))
                            .getDescription())
                    .contains("it stores 2 MiB, its uploads under way announced 1048576 bytes");
            held.requests().onCompleted();
            assertThat(held.result().get(30, TimeUnit.SECONDS).getStored()).isTrue();
            assertThat(BlobUploads.refusal(server.channel, BlobUploads.random(2 << 20, 3))
                            .getDescription())
                    .as("what an environment stored counts after a restart")
                    .contains("it stores 3 MiB");
        }
        try (RunningServer server = RunningServer.start(dataDir, b -> b.blobStoragePerEnvironment(5L << 20))) {
            assertThat(BlobUploads.stored(server.channel, second))
                    .as("a larger limit lets it store more")
                    .isTrue();
        }
    }
}
