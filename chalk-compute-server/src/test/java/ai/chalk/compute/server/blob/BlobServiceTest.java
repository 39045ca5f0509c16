package ai.chalk.compute.server.blob;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.DownloadBlobRequest;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobResponse;
import ai.chalk.compute.server.RunningServer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Blobs over TCP: only missing ones are reported, uploads are checked, downloads stream, restarts keep them. */
class BlobServiceTest {

    @TempDir
    Path dataDir;

    private static BlobRef ref(byte[] bytes) {
        return BlobUploads.ref(bytes);
    }

    private static CompletableFuture<UploadBlobResponse> upload(RunningServer server, BlobRef announced, byte[] bytes) {
        return BlobUploads.upload(server.channel, announced, bytes);
    }

    private static byte[] download(RunningServer server, String digest) {
        var out = new ByteArrayOutputStream();
        BlobServiceGrpc.newBlockingStub(server.channel)
                .downloadBlob(DownloadBlobRequest.newBuilder().setDigest(digest).build())
                .forEachRemaining(r -> out.writeBytes(r.getData().toByteArray()));
        return out.toByteArray();
    }

    private static Throwable failureOf(CompletableFuture<?> call) {
        try {
            call.get(30, TimeUnit.SECONDS);
            throw new AssertionError("the call succeeded");
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void uploadsOnlyWhatIsMissingAndKeepsItAcrossRestarts() throws Exception {
        byte[] big = new byte[3 * 1024 * 1024 + 17];
        new Random(7).nextBytes(big);
        byte[] small = "class files".getBytes();
        BlobRef bigRef = ref(big);
        BlobRef smallRef = ref(small);
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = BlobServiceGrpc.newBlockingStub(server.channel);
            assertThat(api.findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                    .addBlobs(bigRef)
                                    .addBlobs(smallRef)
                                    .build())
                            .getMissingList())
                    .containsExactly(bigRef, smallRef);

            UploadBlobResponse first = upload(server, bigRef, big).get(30, TimeUnit.SECONDS);
            assertThat(first.getStored()).isTrue();
            assertThat(api.findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                    .addBlobs(bigRef)
                                    .addBlobs(smallRef)
                                    .build())
                            .getMissingList())
                    .containsExactly(smallRef);
            assertThat(upload(server, bigRef, big).get(30, TimeUnit.SECONDS).getStored())
                    .as("a second upload of the same bytes stores nothing new")
                    .isFalse();
            assertThat(download(server, bigRef.getDigest())).isEqualTo(big);
        }
        try (RunningServer server = RunningServer.start(dataDir)) {
            assertThat(BlobServiceGrpc.newBlockingStub(server.channel)
                            .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                    .addBlobs(bigRef)
                                    .build())
                            .getMissingList())
                    .isEmpty();
            assertThat(download(server, bigRef.getDigest())).isEqualTo(big);
        }
    }

    @Test
    void refusesBytesThatDoNotMatchTheirDigestAndKeepsNothing() throws Exception {
        byte[] bytes = "the real content".getBytes();
        BlobRef honest = ref(bytes);
        try (RunningServer server = RunningServer.start(dataDir)) {
            Throwable wrongBytes = failureOf(upload(server, honest, "other content!!!".getBytes()));
            assertThat(Status.fromThrowable(wrongBytes).getCode()).isEqualTo(Status.Code.DATA_LOSS);
            assertThat(Status.fromThrowable(wrongBytes).getDescription())
                    .contains("do not match")
                    .contains(honest.getDigest());

            Throwable tooMany =
                    failureOf(upload(server, honest.toBuilder().setSize(3).build(), bytes));
            assertThat(Status.fromThrowable(tooMany).getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(Status.fromThrowable(tooMany).getDescription()).contains("more bytes than the announced size 3");

            assertThat(BlobServiceGrpc.newBlockingStub(server.channel)
                            .findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                                    .addBlobs(honest)
                                    .build())
                            .getMissingList())
                    .containsExactly(honest);
            try (var incoming = Files.list(dataDir.resolve("blobs").resolve("incoming"))) {
                assertThat(incoming.toList())
                        .as("no partial upload is left behind")
                        .isEmpty();
            }
            // the server still serves
            assertThat(upload(server, honest, bytes).get(30, TimeUnit.SECONDS).getStored())
                    .isTrue();
        }
    }

    @Test
    void digestsThatAreNotSha256HexAreRefusedAndNeverNameAPath() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            var api = BlobServiceGrpc.newBlockingStub(server.channel);
            for (String bad : List.of("", "sha256:../../../etc/passwd", "md5:abc", "sha256:" + "A".repeat(64))) {
                assertThatThrownBy(() -> download(server, bad))
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                            assertThat(e.getStatus().getDescription()).contains("is not a blob digest");
                        });
            }
            assertThatThrownBy(() -> api.findMissingBlobs(FindMissingBlobsRequest.newBuilder()
                            .addBlobs(BlobRef.newBuilder().setDigest("sha256:/etc/shadow"))
                            .build()))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getDescription()).startsWith("blobs[0].digest:"));
            String absent = "sha256:" + "0".repeat(64);
            assertThatThrownBy(() -> download(server, absent))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        }
    }
}
