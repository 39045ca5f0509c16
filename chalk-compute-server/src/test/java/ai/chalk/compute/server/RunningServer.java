package ai.chalk.compute.server;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotServiceGrpc;
import ai.chalk.compute.proto.server.v1.AuthServiceGrpc;
import ai.chalk.compute.proto.server.v1.GetTokenRequest;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.auth.ClientCredentials;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real server on a TCP port for tests, with a plaintext channel and the generated stubs, as an
 * independent client written from Chalk's descriptors would use them: it makes a client credential, exchanges it
 * for a token with {@code AuthService/GetToken}, and sends that token with every call.
 */
public final class RunningServer implements AutoCloseable {

    public final ComputeServer server;
    public final ManagedChannel channel;

    private RunningServer(ComputeServer server) {
        this.server = server;
        this.channel = authenticated(server, Caller.DEFAULT_ENVIRONMENT);
    }

    /** A channel to {@code server} whose calls carry a token of a fresh credential of {@code environment}. */
    public static ManagedChannel authenticated(ComputeServer server, String environment) {
        return authenticated(server, environment, UnaryOperator.identity());
    }

    /** As {@link #authenticated(ComputeServer, String)}, the channel built with {@code settings}. */
    public static ManagedChannel authenticated(
            ComputeServer server, String environment, UnaryOperator<NettyChannelBuilder> settings) {
        AtomicReference<String> token = new AtomicReference<>();
        ManagedChannel channel = settings.apply(NettyChannelBuilder.forAddress(
                                "127.0.0.1", server.port().orElseThrow())
                        .usePlaintext()
                        .intercept(bearer(token)))
                .build();
        ClientCredentials.Created credential =
                server.authentication().credentials().create("test", environment);
        token.set(AuthServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .getToken(GetTokenRequest.newBuilder()
                        .setClientId(credential.credential().id())
                        .setClientSecret(credential.secret())
                        .setGrantType("client_credentials")
                        .build())
                .getAccessToken());
        return channel;
    }

    /** Runs {@code sh -c script} in sandbox {@code sandboxId} over {@code channel}, as its environment's caller. */
    public static ai.chalk.compute.proto.sandbox.v2.ExecCommandResponse sh(
            Channel channel, String sandboxId, String script) {
        return SandboxProcessServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .execCommand(ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest.newBuilder()
                        .setSandboxId(sandboxId)
                        .setCommand("sh")
                        .addArgs("-c")
                        .addArgs(script)
                        .build());
    }

    /** Sends {@code authorization: Bearer <token>} once a token is there. */
    public static ClientInterceptor bearer(AtomicReference<String> token) {
        Metadata.Key<String> authorization = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
        return new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(
                    MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                    @Override
                    public void start(Listener<R> listener, Metadata headers) {
                        String t = token.get();
                        if (t != null) {
                            headers.put(authorization, "Bearer " + t);
                        }
                        super.start(listener, headers);
                    }
                };
            }
        };
    }

    public static RunningServer start(Path dataDir) throws IOException {
        return start(dataDir, UnaryOperator.identity());
    }

    public static RunningServer start(Path dataDir, UnaryOperator<ComputeServer.Builder> settings) throws IOException {
        return new RunningServer(
                settings.apply(ComputeServer.builder().dataDir(dataDir).port(0))
                        .build()
                        .start());
    }

    public SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes() {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    public SandboxServiceGrpc.SandboxServiceStub sandboxesAsync() {
        return SandboxServiceGrpc.newStub(channel);
    }

    /** {@code chalk.sandbox.v2.SandboxService}. */
    public ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.SandboxServiceBlockingStub sandboxesV2() {
        return ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    /** {@code chalk.sandbox.v2.SandboxSnapshotService}. */
    public SandboxSnapshotServiceGrpc.SandboxSnapshotServiceBlockingStub snapshots() {
        return SandboxSnapshotServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    public SandboxProcessServiceGrpc.SandboxProcessServiceBlockingStub processes() {
        return SandboxProcessServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    public SandboxProcessServiceGrpc.SandboxProcessServiceStub processesAsync() {
        return SandboxProcessServiceGrpc.newStub(channel);
    }

    /** Creates a sandbox with the server's defaults and returns its id. */
    /** A sandbox of the default spec, made over {@code channel}: in its caller's environment. */
    public static String createSandbox(io.grpc.Channel channel) {
        return ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .createSandbox(ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest.newBuilder()
                        .setSpec(ai.chalk.compute.proto.container.v1.ChalkContainerSpec.getDefaultInstance())
                        .build())
                .getSandbox()
                .getId();
    }

    public String createSandbox() {
        return sandboxes()
                .createSandbox(CreateSandboxRequest.getDefaultInstance())
                .getSandbox()
                .getId();
    }

    public void terminate(String id) {
        sandboxes()
                .terminateSandbox(
                        TerminateSandboxRequest.newBuilder().setSandboxId(id).build());
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.close();
    }

    /**
     * A base for test classes that share one server, started on a fresh data directory before their first test and
     * closed after their last (test classes run one at a time, so each has the fields to itself meanwhile).
     */
    public abstract static class PerTestClass {

        @TempDir
        protected static Path dataDir;

        protected static RunningServer server;

        @BeforeAll
        static void startServer() throws Exception {
            server = RunningServer.start(dataDir);
        }

        @AfterAll
        static void stopServer() throws Exception {
            server.close();
        }
    }
}
