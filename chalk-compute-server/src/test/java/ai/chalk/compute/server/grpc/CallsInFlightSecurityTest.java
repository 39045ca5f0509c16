package ai.chalk.compute.server.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.blob.v1.BlobRef;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.proto.blob.v1.DownloadBlobRequest;
import ai.chalk.compute.proto.blob.v1.DownloadBlobResponse;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.server.ExactlyOneRefusal;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.blob.BlobUploads;
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
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
 * A tenant tries to make the server hold a thread for each of thousands of calls at once: gRPC gives every call a
 * thread of an unbounded pool, and many calls wait (a function call for a replica with room, a create for its image, a
 * build's log followed by a client that does not read). Unary and server-streaming calls under way are now counted,
 * one environment has at most half, and a call past that is answered RESOURCE_EXHAUSTED at once while other
 * environments' calls go on; a call that ends gives its place back.
 */
class CallsInFlightSecurityTest {

    @Test
    void oneEnvironmentHasHalfTheCallsUnderWayAndTheServerItsLimit(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir, b -> b.maxCallsInFlight(4))) {
            CallsInFlight calls = server.server.callsInFlight();
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            ManagedChannel staging = RunningServer.authenticated(server.server, "staging");
            List<Context.CancellableContext> downloads = new ArrayList<>();
            try {
                // health checks are open to anyone and hold no thread: however many, they take no environment's place
                ManagedChannel anonymous = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forAddress(
                                "127.0.0.1", server.server.port().orElseThrow())
                        .usePlaintext()
                        .build();
                try {
                    for (int i = 0; i < 8; i++) {
                        downloads.add(healthWatch(anonymous));
                    }
                    Thread.sleep(500);
                    assertThat(calls.inFlight()).isZero();
                    list(dev);
                } finally {
                    downloads.forEach(w -> w.cancel(null));
                    downloads.clear();
                    anonymous.shutdownNow();
                }
                upload(dev);
                upload(prod);
                downloads.add(unreadDownload(dev));
                downloads.add(unreadDownload(dev));
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> calls.inFlight() == 2);
                StatusRuntimeException share = catchThrowableOfType(() -> list(dev), StatusRuntimeException.class);
                assertThat(share.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(share.getStatus().getDescription())
                        .contains("this environment has 2 calls under way, the most one environment may (half of the"
                                + " 4 the server takes");

                // another environment is not held back; once the server is full, a third is told so
                list(prod);
                downloads.add(unreadDownload(prod));
                downloads.add(unreadDownload(prod));
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> calls.inFlight() == 4);
                StatusRuntimeException full = catchThrowableOfType(() -> list(staging), StatusRuntimeException.class);
                assertThat(full.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(full.getStatus().getDescription()).contains("the server has 4 calls under way, its limit");

                // a call that ends gives its place back
                downloads.remove(0).cancel(null);
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> calls.inFlight() == 3);
                list(dev);
                downloads.forEach(w -> w.cancel(null));
                downloads.clear();
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> calls.inFlight() == 0);
                list(staging);
            } finally {
                downloads.forEach(w -> w.cancel(null));
                for (ManagedChannel c : List.of(dev, prod, staging)) {
                    c.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    @Test
    void aCallMadeAsSoonAsTheLastAnsweredFindsItsPlaceFree(@TempDir Path dataDir) throws Exception {
        // one place per environment: the client's next call reaches the server while the last call's thread may still
        // be returning from sending its answer, and must not be refused for a place it no longer needs
        try (RunningServer server = RunningServer.start(dataDir, b -> b.maxCallsInFlight(2))) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            try {
                for (int i = 0; i < 2000; i++) {
                    list(dev);
                }
                assertThat(server.server.callsInFlight().inFlight()).isZero();
            } finally {
                dev.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void oneAddressHasAFewOfTheHealthCallsWithoutCredentials(@TempDir Path dataDir) throws Exception {
        // anyone who reaches the port may check and watch health, with no token: each such call holds heap while open,
        // so one address has a few under way at most; authenticated calls go on
        try (RunningServer server = RunningServer.start(dataDir)) {
            CallsInFlight calls = server.server.callsInFlight();
            ManagedChannel anonymous = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forAddress(
                            "127.0.0.1", server.server.port().orElseThrow())
                    .usePlaintext()
                    .build();
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            List<Context.CancellableContext> watches = new ArrayList<>();
            try {
                int share = CallsInFlight.OPEN_CALLS_PER_CALLER;
                List<CompletableFuture<Status>> answers = new ArrayList<>();
                for (int i = 0; i <= share; i++) {
                    CompletableFuture<Status> answer = new CompletableFuture<>();
                    answers.add(answer);
                    watches.add(healthWatch(anonymous, answer));
                }
                for (CompletableFuture<Status> answer : answers) {
                    answer.get(60, TimeUnit.SECONDS);
                }
                ExactlyOneRefusal.among(
                        answers.stream().map(CompletableFuture::join).toList(),
                        "address " + PeerAddress.LOOPBACK + ", user "
                                + java.nio.file.Files.getAttribute(java.nio.file.Path.of("/proc/self"), "unix:uid")
                                + " has " + share
                                + " health checks and watches under way, the most one caller"
                                + " may (the server takes " + CallsInFlight.OPEN_CALL_LIMIT + " from all): close some"
                                + " watches, or wait for checks to end");
                assertThat(calls.healthCalls()).isEqualTo(share);
                StatusRuntimeException check =
                        catchThrowableOfType(() -> check(anonymous), StatusRuntimeException.class);
                assertThat(check.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                list(dev);

                // a watch that is closed gives its place back
                watches.forEach(w -> w.cancel(null));
                watches.clear();
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> calls.healthCalls() == 0);
                assertThat(check(anonymous)).isEqualTo(io.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING);
                CompletableFuture<Status> again = new CompletableFuture<>();
                watches.add(healthWatch(anonymous, again));
                assertThat(again.get(30, TimeUnit.SECONDS).isOk()).isTrue();
            } finally {
                watches.forEach(w -> w.cancel(null));
                anonymous.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                dev.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }

    private static io.grpc.health.v1.HealthCheckResponse.ServingStatus check(Channel channel) {
        return io.grpc.health.v1.HealthGrpc.newBlockingStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .check(io.grpc.health.v1.HealthCheckRequest.getDefaultInstance())
                .getStatus();
    }

    private static void list(Channel channel) {
        SandboxServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .listSandboxes(ListSandboxesRequest.getDefaultInstance());
    }

    /**
     * A download of {@link #BLOB} that the client does not read: the server sends what the transport's window takes
     * and waits, the call under way until cancelled.
     */
    private static Context.CancellableContext unreadDownload(Channel channel) {
        Context.CancellableContext context = Context.current().withCancellation();
        context.run(() -> BlobServiceGrpc.newStub(channel)
                .downloadBlob(
                        DownloadBlobRequest.newBuilder()
                                .setDigest(BLOB.getDigest())
                                .build(),
                        new ClientResponseObserver<DownloadBlobRequest, DownloadBlobResponse>() {
                            @Override
                            public void beforeStart(ClientCallStreamObserver<DownloadBlobRequest> stream) {
                                stream.disableAutoRequestWithInitial(0);
                            }

                            @Override
                            public void onNext(DownloadBlobResponse value) {}

                            @Override
                            public void onError(Throwable t) {}

                            @Override
                            public void onCompleted() {}
                        }));
        return context;
    }

    private static Context.CancellableContext healthWatch(Channel channel) {
        return healthWatch(channel, new CompletableFuture<>());
    }

    /** A health watch; {@code answer} gets OK with its first status, or the status that refused it. */
    private static Context.CancellableContext healthWatch(Channel channel, CompletableFuture<Status> answer) {
        Context.CancellableContext context = Context.current().withCancellation();
        context.run(() -> io.grpc.health.v1.HealthGrpc.newStub(channel)
                .watch(
                        io.grpc.health.v1.HealthCheckRequest.getDefaultInstance(),
                        new StreamObserver<io.grpc.health.v1.HealthCheckResponse>() {
                            @Override
                            public void onNext(io.grpc.health.v1.HealthCheckResponse value) {
                                answer.complete(Status.OK);
                            }

                            @Override
                            public void onError(Throwable t) {
                                answer.complete(Status.fromThrowable(t));
                            }

                            @Override
                            public void onCompleted() {}
                        }));
        return context;
    }

    /** 8 MiB of random bytes, more than the transport's flow-control window. */
    private static final byte[] BYTES = new byte[8 << 20];

    private static final BlobRef BLOB;

    static {
        new java.util.Random(3).nextBytes(BYTES);
        BLOB = BlobUploads.ref(BYTES);
    }

    /** Uploads {@link #BLOB} in {@code channel}'s environment. */
    private static void upload(Channel channel) throws Exception {
        BlobUploads.upload(channel, BLOB, BYTES).get(60, TimeUnit.SECONDS);
    }
}
