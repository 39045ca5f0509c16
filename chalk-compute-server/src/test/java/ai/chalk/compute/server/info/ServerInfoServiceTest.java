package ai.chalk.compute.server.info;

import static org.assertj.core.api.Assertions.assertThat;

import ai.chalk.compute.proto.sandbox.v1.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v1.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v1.SandboxInfo;
import ai.chalk.compute.proto.sandbox.v1.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.TerminateSandboxRequest;
import ai.chalk.compute.proto.serverinfo.v1.GetServerInfoRequest;
import ai.chalk.compute.proto.serverinfo.v1.GetServerInfoResponse;
import ai.chalk.compute.proto.serverinfo.v1.ServerInfoServiceGrpc;
import ai.chalk.compute.server.RunningServer;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real server over TCP tells each environment its runtime, isolation and its own sandboxes by state. */
class ServerInfoServiceTest {

    @TempDir
    Path dataDir;

    @Test
    void answersWithTheRuntimeTheIsolationInForceAndTheCallersSandboxesOnly() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                String sandbox = SandboxServiceGrpc.newBlockingStub(dev)
                        .createSandbox(CreateSandboxRequest.getDefaultInstance())
                        .getSandbox()
                        .getId();

                GetServerInfoResponse mine = info(dev);
                assertThat(mine.getRuntime()).isEqualTo(server.server.runtimeName());
                assertThat(mine.getIsolation())
                        .isEqualTo(server.server.isolation().level());
                assertThat(mine.getIsolationDetail())
                        .isEqualTo(server.server.isolation().detail());
                assertThat(mine.getSandboxesMap())
                        .isEqualTo(
                                Map.of("PENDING", 0L, "RUNNING", 1L, "SUSPENDED", 0L, "TERMINATED", 0L, "FAILED", 0L));
                // another environment's sandboxes are not its business
                assertThat(info(prod).getSandboxesMap()).containsEntry("RUNNING", 0L);

                SandboxServiceGrpc.newBlockingStub(dev)
                        .terminateSandbox(TerminateSandboxRequest.newBuilder()
                                .setSandboxId(sandbox)
                                .build());
                assertThat(info(dev).getSandboxesMap())
                        .containsEntry("RUNNING", 0L)
                        .containsEntry("TERMINATED", 1L);
            } finally {
                dev.shutdownNow();
                prod.shutdownNow();
            }
        }
    }

    @Test
    void countsTheSandboxesStartedAheadOfTimeAndListsNoneOfThem() throws Exception {
        try (RunningServer server = RunningServer.start(dataDir)) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            try {
                SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes = SandboxServiceGrpc.newBlockingStub(dev);
                assertThat(info(dev).getPooledSandboxes()).isZero();
                String first = sandboxes
                        .createSandbox(CreateSandboxRequest.getDefaultInstance())
                        .getSandbox()
                        .getId();
                // the spec has been created once: two of it are started ahead of time (the server's default)
                Awaitility.await()
                        .atMost(Duration.ofSeconds(60))
                        .until(() -> info(dev).getPooledSandboxes() == 2);
                String second = sandboxes
                        .createSandbox(CreateSandboxRequest.getDefaultInstance())
                        .getSandbox()
                        .getId();
                assertThat(
                                sandboxes
                                        .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                                        .getSandboxesList()
                                        .stream()
                                        .map(SandboxInfo::getId))
                        .containsExactlyInAnyOrder(first, second);
                assertThat(info(dev).getSandboxesMap()).containsEntry("RUNNING", 2L);
                Awaitility.await()
                        .atMost(Duration.ofSeconds(60))
                        .until(() -> info(dev).getPooledSandboxes() == 2);
                assertThat(server.server.pooledSandboxes()).isEqualTo(2);
            } finally {
                dev.shutdownNow();
            }
        }
    }

    private static GetServerInfoResponse info(Channel channel) {
        return ServerInfoServiceGrpc.newBlockingStub(channel).getServerInfo(GetServerInfoRequest.getDefaultInstance());
    }
}
