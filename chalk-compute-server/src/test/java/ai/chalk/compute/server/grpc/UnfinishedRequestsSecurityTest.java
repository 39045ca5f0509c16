package ai.chalk.compute.server.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.FindMissingBlobsRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.UnreadCalls;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A peer tries to make the server hold parsed requests: gRPC runs a unary call's method only once the client has
 * half-closed, and keeps the request until then, and a message of empty repeated fields is about 20 times its size as
 * objects. Over TCP, against a real server: a request left without its half-close is ended after
 * {@link UnfinishedRequests#WAIT}, compressed requests (33 KiB of gzip for 33 MiB of message, past the budget of
 * messages being received) are refused, and the methods open to anyone take small messages only.
 */
class UnfinishedRequestsSecurityTest {

    @Test
    void aRequestLeftWithoutItsHalfCloseIsEndedAndTheServerGoesOn(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel anonymous = anonymous(server);
            try {
                // 200,000 empty refs: 400 KB on the wire, several MB once parsed, held until the half-close
                FindMissingBlobsRequest.Builder many = FindMissingBlobsRequest.newBuilder();
                for (int i = 0; i < 200_000; i++) {
                    many.addBlobs(BlobRef.getDefaultInstance());
                }
                long start = System.nanoTime();
                CompletableFuture<Status> tenant =
                        withoutHalfClose(dev, BlobServiceGrpc.getFindMissingBlobsMethod(), many.build());
                CompletableFuture<Status> peer = withoutHalfClose(
                        anonymous, HealthGrpc.getCheckMethod(), HealthCheckRequest.getDefaultInstance());
                for (CompletableFuture<Status> call : java.util.List.of(tenant, peer)) {
                    Status status = call.get(UnfinishedRequests.WAIT.toSeconds() + 10, TimeUnit.SECONDS);
                    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                    assertThat(status.getDescription())
                            .contains("did not end its side of the call (half-close) within 5 s");
                }
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
                        .isGreaterThanOrEqualTo(UnfinishedRequests.WAIT.toMillis());
                // calls that half-close, as every client's do, are served as before
                assertThat(SandboxServiceGrpc.newBlockingStub(dev)
                                .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                                .getSandboxesList())
                        .isEmpty();
                assertThat(HealthGrpc.newBlockingStub(anonymous)
                                .check(HealthCheckRequest.getDefaultInstance())
                                .getStatus())
                        .isNotNull();
            } finally {
                dev.shutdownNow();
                anonymous.shutdownNow();
            }
        }
    }

    @Test
    void compressedRequestsAndLargeRequestsToOpenMethodsAreRefused(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel anonymous = anonymous(server);
            try {
                StatusRuntimeException gzip = catchThrowableOfType(
                        () -> SandboxServiceGrpc.newBlockingStub(dev)
                                .withCompression("gzip")
                                .listSandboxes(ListSandboxesRequest.getDefaultInstance()),
                        StatusRuntimeException.class);
                assertThat(gzip.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED);
                assertThat(gzip.getStatus().getDescription()).contains("gzip");

                StatusRuntimeException large = catchThrowableOfType(
                        () -> AuthServiceGrpc.newBlockingStub(anonymous)
                                .withDeadlineAfter(30, TimeUnit.SECONDS)
                                .getToken(GetTokenRequest.newBuilder()
                                        .setClientId("x".repeat(100_000))
                                        .setClientSecret("y")
                                        .setGrantType("client_credentials")
                                        .build()),
                        StatusRuntimeException.class);
                assertThat(large.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(large.getStatus().getDescription())
                        .contains("a request to chalk.server.v1.AuthService/GetToken may be at most 8192 bytes");

                // the same calls, uncompressed and of their usual size, are served
                assertThat(SandboxServiceGrpc.newBlockingStub(dev)
                                .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                                .getSandboxesList())
                        .isEmpty();
                StatusRuntimeException wrongSecret = catchThrowableOfType(
                        () -> AuthServiceGrpc.newBlockingStub(anonymous)
                                .getToken(GetTokenRequest.newBuilder()
                                        .setClientId("no-such-client")
                                        .setClientSecret("y")
                                        .setGrantType("client_credentials")
                                        .build()),
                        StatusRuntimeException.class);
                assertThat(wrongSecret.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
            } finally {
                dev.shutdownNow();
                anonymous.shutdownNow();
            }
        }
    }

    private static ManagedChannel anonymous(RunningServer server) {
        return NettyChannelBuilder.forAddress("127.0.0.1", server.server.port().orElseThrow())
                .usePlaintext()
                .build();
    }

    /** Starts a call, sends its one message, and never half-closes; completes with the status the call ends with. */
    private static <Q, R> CompletableFuture<Status> withoutHalfClose(
            ManagedChannel channel, MethodDescriptor<Q, R> method, Q request) {
        CompletableFuture<Status> closed = new CompletableFuture<>();
        UnreadCalls.withoutHalfClose(channel, method, CallOptions.DEFAULT, request, closed);
        return closed;
    }
}
