package ai.chalk.compute.auth;

import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * A real gRPC server on a loopback TCP port: the {@link RecordingAuthService} (open, as Chalk's is) and a
 * gRPC health service that requires a bearer token, behind a {@link MetadataRecorder}.
 */
final class AuthTestServer implements AutoCloseable {

    private final Server server;
    private final ManagedChannel channel;
    final RecordingAuthService auth;
    final MetadataRecorder recorder = new MetadataRecorder();

    AuthTestServer(RecordingAuthService auth) {
        this.auth = auth;
        HealthStatusManager health = new HealthStatusManager();
        try {
            server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                    .addService(auth)
                    .addService(ServerInterceptors.intercept(health.getHealthService(), recorder))
                    .build()
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        channel = Grpc.newChannelBuilderForAddress("127.0.0.1", port(), InsecureChannelCredentials.create())
                .build();
    }

    int port() {
        return server.getPort();
    }

    /** The API server's address as users configure it. */
    String apiServer() {
        return "http://127.0.0.1:" + port();
    }

    /** A plain channel to the server, without authentication. */
    ManagedChannel channel() {
        return channel;
    }

    /** Calls the protected health service through the given interceptor. */
    HealthCheckResponse.ServingStatus check(ChalkAuthInterceptor interceptor) {
        Channel authenticated = ClientInterceptors.intercept(channel, interceptor);
        return HealthGrpc.newBlockingStub(authenticated)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance())
                .getStatus();
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow();
        server.shutdownNow();
        channel.awaitTermination(5, TimeUnit.SECONDS);
        server.awaitTermination(5, TimeUnit.SECONDS);
    }
}
