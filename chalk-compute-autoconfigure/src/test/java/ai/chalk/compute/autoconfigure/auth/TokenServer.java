package ai.chalk.compute.autoconfigure.auth;

import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.proto.server.v1.GetTokenResponse;
import com.google.protobuf.Timestamp;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real {@code chalk.server.v1.AuthService} on a loopback port: exchanges one client id and secret for
 * {@code token-1}, {@code token-2}, ..., valid for an hour.
 */
final class TokenServer extends AuthServiceGrpc.AuthServiceImplBase implements AutoCloseable {

    private final String clientId;
    private final String clientSecret;
    private final AtomicInteger exchanges = new AtomicInteger();
    private final Server server;

    TokenServer(String clientId, String clientSecret) throws Exception {
        this.clientId = clientId;
        this.clientSecret = clientSecret;
        this.server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .addService(this)
                .build()
                .start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getPort();
    }

    int exchanges() {
        return exchanges.get();
    }

    @Override
    public void getToken(GetTokenRequest request, StreamObserver<GetTokenResponse> response) {
        if (!request.getClientId().equals(clientId)
                || !request.getClientSecret().equals(clientSecret)) {
            response.onError(
                    Status.UNAUTHENTICATED.withDescription("unknown client").asRuntimeException());
            return;
        }
        int n = exchanges.incrementAndGet();
        Instant expires = Instant.now().plusSeconds(3600);
        response.onNext(GetTokenResponse.newBuilder()
                .setAccessToken("token-" + n)
                .setTokenType("Bearer")
                .setExpiresIn(3600)
                .setExpiresAt(Timestamp.newBuilder().setSeconds(expires.getEpochSecond()))
                .setPrimaryEnvironment("env-primary")
                .build());
        response.onCompleted();
    }

    @Override
    public void close() {
        server.shutdownNow();
    }
}
