package ai.chalk.compute.function.remote;

import ai.chalk.compute.function.FunctionRegistry;
import ai.chalk.compute.function.catalog.FunctionVersion;
import ai.chalk.compute.function.deploy.CodeSnapshot;
import ai.chalk.compute.function.deploy.FunctionDeployer;
import ai.chalk.compute.function.deploy.WorkerMode;
import ai.chalk.compute.proto.blob.v1.BlobServiceGrpc;
import ai.chalk.compute.sandbox.SandboxClient;
import ai.chalk.compute.server.ComputeServer;
import ai.chalk.compute.server.auth.Authentication;
import com.acme.Tally;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real server on a loopback TCP port (local runtime: workers are JVMs in sandboxes) with {@link Tally}'s
 * functions deployed from this test JVM's class path, and a client channel that counts blob uploads.
 */
final class DeployedTally implements AutoCloseable {

    final ComputeServer server;
    final ManagedChannel channel;
    final SandboxClient client;
    final FunctionRegistry registry = new FunctionRegistry();
    final AtomicInteger uploads = new AtomicInteger();
    final CodeSnapshot code;

    DeployedTally(Path dataDir) throws Exception {
        server = ComputeServer.builder()
                .dataDir(dataDir)
                .port(0)
                .auth(Authentication.Mode.NONE)
                .build()
                .start();
        ClientInterceptor counter = new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(
                    MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                if (method.getFullMethodName()
                        .equals(BlobServiceGrpc.getUploadBlobMethod().getFullMethodName())) {
                    uploads.incrementAndGet();
                }
                return next.newCall(method, options);
            }
        };
        channel = NettyChannelBuilder.forAddress("127.0.0.1", server.port().orElseThrow())
                .usePlaintext()
                .intercept(counter)
                .build();
        client = SandboxClient.forChannel(channel);
        registry.register(Tally.class);
        code = CodeSnapshot.ofClassPath();
    }

    FunctionDeployer deployer() {
        return client.functions();
    }

    FunctionVersion deploy(String name) {
        return ensure(name).version();
    }

    FunctionDeployer.Deployment ensure(String name) {
        var definition = registry.get(name).definition();
        return deployer().ensure(definition, java.util.List.of(definition), code, WorkerMode.PLAIN, false);
    }

    RemoteFunction remote(String name) {
        return RemoteFunction.fromName(client, registry.get(name).definition());
    }

    @Override
    public void close() throws Exception {
        code.close();
        client.close();
        channel.shutdownNow();
        server.close();
    }
}
