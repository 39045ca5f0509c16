package ai.chalk.compute.function.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.DownloadBlobRequest;
import ai.chalk.compute.server.ComputeServer;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Uploads against a real server's BlobService, counting the UploadBlob calls that reach it. */
class CodeUploaderTest {

    @TempDir
    Path dir;

    ComputeServer server;
    ManagedChannel channel;
    final AtomicInteger uploadCalls = new AtomicInteger();

    @BeforeEach
    void start() throws Exception {
        server = ComputeServer.builder()
                .dataDir(Files.createDirectories(dir.resolve("data")))
                .build()
                .start();
        ClientInterceptor counter = new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(
                    MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                if (method.getFullMethodName()
                        .equals(BlobServiceGrpc.getUploadBlobMethod().getFullMethodName())) {
                    uploadCalls.incrementAndGet();
                }
                return next.newCall(method, options);
            }
        };
        channel = InProcessChannelBuilder.forName(server.inProcessName())
                .intercept(counter)
                .build();
    }

    @AfterEach
    void stop() {
        channel.shutdownNow();
        server.close();
    }

    @Test
    void onlyWhatTheServerLacksIsUploaded() throws Exception {
        Path app = Files.createDirectories(dir.resolve("app"));
        List<Path> classPath = CodeSnapshotTest.classPath(app);
        CodeUploader uploader = new CodeUploader(channel);

        try (CodeSnapshot code = CodeSnapshot.of(classPath)) {
            UploadResult first = uploader.upload(code);
            assertThat(first.uploaded())
                    .containsExactly(
                            code.entries().get(0).digest(),
                            code.entries().get(1).digest(),
                            code.digest());
            assertThat(uploadCalls).hasValue(3);
            assertThat(download(code.entries().get(1).digest()))
                    .isEqualTo(Files.readAllBytes(code.entries().get(1).blob()));
            assertThat(download(code.digest())).isEqualTo(code.manifest());

            assertThat(uploader.upload(code).uploaded()).isEmpty();
            assertThat(uploadCalls).hasValue(3);
        }

        byte[] changed = Files.readAllBytes(app.resolve("target/classes/com/acme/Embedder.class"));
        Files.write(
                app.resolve("target/classes/com/acme/Embedder.class"),
                java.util.Arrays.copyOf(changed, changed.length + 1));
        try (CodeSnapshot code = CodeSnapshot.of(classPath)) {
            UploadResult second = uploader.upload(code);
            assertThat(second.uploaded()).containsExactly(code.entries().get(0).digest(), code.digest());
            assertThat(uploadCalls).hasValue(5);
            assertThat(download(code.entries().get(0).digest()))
                    .isEqualTo(Files.readAllBytes(code.entries().get(0).blob()));
        }
    }

    @Test
    void aLargeJarIsStreamedInChunks() throws Exception {
        Path jar = dir.resolve("big.jar");
        byte[] bytes = new byte[5 * 1024 * 1024 + 17];
        new Random(42).nextBytes(bytes);
        Files.write(jar, bytes);
        try (CodeSnapshot code = CodeSnapshot.of(List.of(jar))) {
            UploadResult result = new CodeUploader(channel).upload(code);
            assertThat(result.uploaded()).hasSize(2);
            assertThat(result.bytes()).isEqualTo(bytes.length + code.manifest().length);
            assertThat(download(code.entries().get(0).digest())).isEqualTo(bytes);
        }
    }

    private byte[] download(String digest) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BlobServiceGrpc.newBlockingStub(channel)
                .downloadBlob(DownloadBlobRequest.newBuilder().setDigest(digest).build())
                .forEachRemaining(part -> out.writeBytes(part.getData().toByteArray()));
        return out.toByteArray();
    }
}
