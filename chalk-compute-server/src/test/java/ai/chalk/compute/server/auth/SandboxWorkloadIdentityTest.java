package ai.chalk.compute.server.auth;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ChalkWorkloadIdentity;
import ai.chalk.compute.proto.sandbox.v1.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ExecCommandRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxProcessServiceGrpc;
import ai.chalk.compute.proto.server.v1.Environment;
import ai.chalk.compute.proto.server.v1.GetEnvRequest;
import ai.chalk.compute.proto.server.v1.TeamServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.worker.WorkerLaunch;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sandbox created with {@code chalk_workload_identity} gets a token the server rotates and the server's socket for
 * deployed code, so the SDK inside works with no configuration; its calls act in its own environment with the rights
 * of deployed code. A sandbox without it gets neither.
 */
class SandboxWorkloadIdentityTest {

    @Test
    void aSandboxWithIdentityCallsItsServerInItsEnvironmentAndLosesItsTokenWhenItEnds(@TempDir Path dataDir)
            throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            String id = ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc.newBlockingStub(dev)
                    .createSandbox(CreateSandboxRequest.newBuilder()
                            .setSpec(ChalkContainerSpec.newBuilder()
                                    .setChalkWorkloadIdentity(ChalkWorkloadIdentity.getDefaultInstance()))
                            .build())
                    .getSandbox()
                    .getId();
            var processes = SandboxProcessServiceGrpc.newBlockingStub(dev).withDeadlineAfter(60, TimeUnit.SECONDS);
            String said = processes
                    .execCommand(ExecCommandRequest.newBuilder()
                            .setSandboxId(id)
                            .setCommand("/bin/sh")
                            .addArgs("-c")
                            .addArgs("echo \"$CHALK_COMPUTE_TARGET\"; cat \"$CHALK_WEB_IDENTITY_TOKEN_FILE\"")
                            .build())
                    .getStdout()
                    .toStringUtf8();
            String[] lines = said.split("\n");
            assertThat(lines[0]).isEqualTo(WorkerLaunch.SERVER_SOCKET);
            JWTClaimsSet claims = SignedJWT.parse(lines[1].strip()).getJWTClaimsSet();
            assertThat(claims.getSubject()).isEqualTo("sandbox:" + id);
            assertThat(claims.getStringClaim("environment_id")).isEqualTo("dev");

            // stolen from the sandbox, the token is no good on the TCP port, where the limits of deployed code do not
            // apply
            ManagedChannel stolen = NettyChannelBuilder.forAddress(
                            "127.0.0.1", server.server.port().orElseThrow())
                    .usePlaintext()
                    .intercept(RunningServer.bearer(new AtomicReference<>(lines[1].strip())))
                    .build();
            assertThat(code(() -> SandboxServiceGrpc.newBlockingStub(stolen)
                            .listSandboxes(ListSandboxesRequest.getDefaultInstance())))
                    .isEqualTo(Status.Code.UNAUTHENTICATED);
            stolen.shutdownNow();

            // what the SDK inside does: call the server through the socket with that token
            Path socket = dataDir.resolve("functions/server").resolve(WorkerLaunch.SERVER_SOCKET_NAME);
            EpollEventLoopGroup group = new EpollEventLoopGroup(1);
            ManagedChannel inside = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                    .channelType(EpollDomainSocketChannel.class)
                    .eventLoopGroup(group)
                    .usePlaintext()
                    .intercept(RunningServer.bearer(new AtomicReference<>(lines[1].strip())))
                    .build();
            try {
                String made = SandboxServiceGrpc.newBlockingStub(inside)
                        .withDeadlineAfter(60, TimeUnit.SECONDS)
                        .createSandbox(ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest.getDefaultInstance())
                        .getSandbox()
                        .getId();
                assertThat(SandboxServiceGrpc.newBlockingStub(dev)
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setSandboxId(made)
                                        .build())
                                .getSandbox()
                                .getId())
                        .isEqualTo(made);
                assertThat(code(() -> server.sandboxes()
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setSandboxId(made)
                                        .build())))
                        .as("default does not see what the dev sandbox made")
                        .isEqualTo(Status.Code.NOT_FOUND);
                Environment described = TeamServiceGrpc.newBlockingStub(inside)
                        .getEnv(GetEnvRequest.getDefaultInstance())
                        .getEnvironment();
                assertThat(described.getId()).isEqualTo("dev");
                assertThat(described.hasGrpcEngineUrl())
                        .as("a workload queues its calls through its socket, the only way it has to the server")
                        .isFalse();
            } finally {
                inside.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            }

            Path identity = dataDir.resolve("identity").resolve(id);
            assertThat(identity).exists();
            SandboxServiceGrpc.newBlockingStub(dev)
                    .terminateSandbox(TerminateSandboxRequest.newBuilder()
                            .setSandboxId(id)
                            .build());
            Awaitility.await()
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> !identity.toFile().exists());
            dev.shutdownNow();
        }
    }

    @Test
    void aSandboxWithoutIdentityGetsNoTokenAndNoSocket(@TempDir Path dataDir) throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            String id = server.createSandbox();
            String said = server.processes()
                    .execCommand(ExecCommandRequest.newBuilder()
                            .setSandboxId(id)
                            .setCommand("/bin/sh")
                            .addArgs("-c")
                            .addArgs("echo \"[$CHALK_WEB_IDENTITY_TOKEN_FILE][$CHALK_COMPUTE_TARGET]\";"
                                    + " ls /chalk 2>&1 || true")
                            .build())
                    .getStdout()
                    .toStringUtf8();
            assertThat(said).startsWith("[][]").doesNotContain("identity").doesNotContain("server");
            server.terminate(id);
        }
    }

    private static Status.Code code(Runnable call) {
        try {
            call.run();
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }
}
