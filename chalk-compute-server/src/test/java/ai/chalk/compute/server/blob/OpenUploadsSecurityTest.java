package ai.chalk.compute.server.blob;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.blob.v1.UploadBlobRequest;
import ai.chalk.compute.proto.blob.v1.UploadBlobResponse;
import ai.chalk.compute.server.ExactlyOneRefusal;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant starts uploads by the thousand and never finishes them: each held a file descriptor of the server's, and
 * 20,000 of them (this machine's limit) left no descriptor for anyone's sandboxes, commands or stores. An environment
 * now has at most half of {@value BlobServiceV1#MAX_OPEN_UPLOADS} uploads open; past that, RESOURCE_EXHAUSTED saying
 * so, while other environments upload, and an upload that ends gives its place back.
 */
class OpenUploadsSecurityTest {

    @Test
    void oneEnvironmentKeepsAtMostHalfTheOpenUploads(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            List<Open> uploads = new ArrayList<>();
            try {
                int share = BlobServiceV1.MAX_OPEN_UPLOADS / 2;
                byte[] bytes = new byte[4096];
                for (int i = 0; i <= share; i++) {
                    uploads.add(Open.start(dev, bytes));
                }
                Awaitility.await()
                        .atMost(Duration.ofSeconds(30))
                        .until(() -> uploads.stream().anyMatch(u -> u.result().isDone()));
                Thread.sleep(1000); // every announcement has been read by now: only one is refused
                ExactlyOneRefusal.among(
                        uploads.stream()
                                .filter(u -> u.result().isDone())
                                .map(u -> Status.fromThrowable(catchFailure(u.result())))
                                .toList(),
                        "this environment has " + share + " uploads open, the most one environment may (half of the "
                                + BlobServiceV1.MAX_OPEN_UPLOADS + " the server keeps open): finish or cancel some"
                                + " before starting more");

                // another environment uploads meanwhile
                byte[] other = "prod's".getBytes();
                assertThat(BlobUploads.upload(prod, BlobUploads.ref(other), other)
                                .get(30, TimeUnit.SECONDS)
                                .getStored())
                        .isTrue();

                // uploads that end, cancelled or finished, give their places back
                uploads.forEach(Open::cancel);
                uploads.clear();
                byte[] again = "dev's again".getBytes();
                Awaitility.await()
                        .atMost(Duration.ofSeconds(30))
                        .ignoreExceptions()
                        .until(() -> BlobUploads.upload(dev, BlobUploads.ref(again), again)
                                .get(30, TimeUnit.SECONDS)
                                .getStored());
            } finally {
                uploads.forEach(Open::cancel);
                for (ManagedChannel c : List.of(dev, prod)) {
                    c.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    private static Throwable catchFailure(CompletableFuture<?> result) {
        try {
            result.join();
            return new AssertionError("the upload succeeded");
        } catch (java.util.concurrent.CompletionException e) {
            return e.getCause();
        }
    }

    /** An upload announced with its first bytes sent, left open. */
    private record Open(BlobUploads.Open upload) {

        static Open start(Channel channel, byte[] bytes) {
            BlobUploads.Open upload = BlobUploads.open(channel, BlobUploads.ref(bytes));
            upload.requests()
                    .onNext(UploadBlobRequest.newBuilder()
                            .setData(ByteString.copyFrom(bytes, 0, 1024))
                            .build());
            return new Open(upload);
        }

        CompletableFuture<UploadBlobResponse> result() {
            return upload.result();
        }

        void cancel() {
            if (!upload.result().isDone()) {
                upload.requests()
                        .onError(Status.CANCELLED.withDescription("test over").asRuntimeException());
            }
        }
    }
}
