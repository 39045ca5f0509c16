package ai.chalk.compute.server.blob;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.function.TestCode;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Blobs that nothing refers to are collected ({@code --unused-blobs-kept-for}), over TCP against a real server with two
 * environments: they stop counting against their environment's blob storage, and their files go once no environment
 * holds them. Before this, a tenant that deleted what it had deployed kept its storage full for good, and the disk only
 * ever filled. What a function version, a dataset or a kept query refers to stays, and so does a blob stored since
 * (one asked about since: {@code BlobOwnerStoreTest}).
 */
class BlobCollectionTest {

    @TempDir
    Path dataDir;

    private static List<BlobRef> missing(Channel channel, BlobRef... refs) {
        return BlobServiceGrpc.newBlockingStub(channel)
                .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                        .addAllBlobs(List.of(refs))
                        .build())
                .getMissingList();
    }

    private Path file(BlobRef ref) {
        String hex = ref.getDigest().substring("sha256:".length());
        return dataDir.resolve("blobs")
                .resolve("sha256")
                .resolve(hex.substring(0, 2))
                .resolve(hex);
    }

    @Test
    void unusedBlobsStopCountingAndGoOnceNoEnvironmentHoldsThemWhileOnesStoredSinceStay() throws Exception {
        byte[] unused = BlobUploads.random(2 << 20, 1);
        byte[] next = BlobUploads.random(2 << 20, 2);
        byte[] storedSince = BlobUploads.random(1000, 3);
        BlobRef unusedRef = BlobUploads.ref(unused);
        BlobRef storedSinceRef = BlobUploads.ref(storedSince);
        try (RunningServer server = RunningServer.start(dataDir, b -> b.blobStoragePerEnvironment(3L << 20))) {
            ManagedChannel dev = server.channel;
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                assertThat(BlobUploads.stored(dev, unused)).isTrue();
                assertThat(BlobUploads.stored(prod, unused)).isTrue(); // the same bytes: kept once, counted for each
                assertThat(BlobUploads.refusal(dev, next).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                // a file no environment owns, as a run stopped between releasing its last owner and deleting it leaves
                byte[] stray = BlobUploads.random(1000, 4);
                Path strayFile = file(BlobUploads.ref(stray));
                Files.createDirectories(strayFile.getParent());
                Files.write(strayFile, stray);
                Files.setLastModifiedTime(
                        strayFile,
                        java.nio.file.attribute.FileTime.from(Instant.now().minusSeconds(60)));
                Instant cutoff = Instant.now();
                Thread.sleep(5); // stored after the cutoff, even on a coarse clock
                assertThat(BlobUploads.stored(dev, storedSince)).isTrue();

                BlobCollection.Collected collected = server.server.collectBlobs(cutoff);

                assertThat(collected.released()).isEqualTo(2);
                assertThat(collected.releasedBytes()).isEqualTo(2L * unused.length);
                assertThat(collected.deleted()).isEqualTo(2);
                assertThat(collected.deletedBytes()).isEqualTo(unused.length + stray.length);
                assertThat(file(unusedRef)).doesNotExist();
                assertThat(strayFile).doesNotExist();
                assertThat(missing(dev, unusedRef)).containsExactly(unusedRef);
                assertThat(missing(prod, unusedRef)).containsExactly(unusedRef);
                assertThat(file(storedSinceRef)).exists();
                assertThat(missing(dev, storedSinceRef)).isEmpty();
                // dev's storage counts what it holds now: the next blob fits
                assertThat(BlobUploads.stored(dev, next)).isTrue();
                assertThat(BlobUploads.refusal(dev, unused).getDescription())
                        .contains("it stores " + ((next.length + storedSince.length) >> 20) + " MiB");
            } finally {
                prod.shutdownNow();
            }
        }
    }

    @Test
    void aFunctionVersionsCodeStaysUntilTheFunctionIsDeleted() throws Exception {
        TestCode code = new TestCode("collected", false);
        try (RunningServer server = RunningServer.start(dataDir)) {
            assertThat(code.upload(server.channel)).isEqualTo(2); // the manifest and its one entry
            var catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(server.channel);
            catalog.createExternalFunctionVersion(code.echoDeployment("kept"));
            Thread.sleep(5);

            assertThat(server.server.collectBlobs(Instant.now()).released()).isZero();
            assertThat(code.missing(server.channel)).isEmpty();

            catalog.deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                    .setFunctionName("kept")
                    .build());
            Thread.sleep(5);
            BlobCollection.Collected collected = server.server.collectBlobs(Instant.now());

            assertThat(collected.released()).isEqualTo(2);
            assertThat(collected.deleted()).isEqualTo(2);
            assertThat(code.missing(server.channel)).hasSize(2);
            try (var files = Files.walk(dataDir.resolve("blobs").resolve("sha256"))) {
                assertThat(files.filter(Files::isRegularFile)).isEmpty();
            }
        }
    }
}
