package ai.chalk.compute.server.sandbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.ChalkWorkloadIdentity;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.server.DockerRuntimeOptions;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.RuntimeOptions;
import ai.chalk.compute.server.runtime.docker.DockerTesting;
import ai.chalk.compute.server.runtime.local.SandboxDefaults;
import com.google.protobuf.util.Durations;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A tenant creates sandboxes until the server is full: before, sandboxes counted server-wide only, so one environment
 * took all of them and every other environment's create was refused until it let go. One environment now runs at most
 * half; a sandbox's place is given back before its end is answered, whether it was terminated or its lifetime ran out.
 * The count is the server's, above the runtimes: both are run.
 */
class SandboxSharesSecurityTest {

    @ParameterizedTest
    @ValueSource(strings = {"local", "docker"})
    void oneEnvironmentRunsAtMostHalfTheServersSandboxes(String runtime, @TempDir Path dataDir) throws Exception {
        SandboxDefaults d = SandboxDefaults.STANDARD;
        RuntimeOptions options = runtime.equals("docker")
                ? DockerRuntimeOptions.builder()
                        .defaultImage(DockerTesting.image())
                        .maxSandboxes(4)
                        .build()
                : LocalRuntimeOptions.builder()
                        .defaults(new SandboxDefaults(d.memoryBytes(), d.layerBytes(), d.pidsMax(), d.openFiles(), 4))
                        .poolSize(0)
                        .build();
        try (RunningServer server = RunningServer.start(dataDir, b -> b.runtime(options))) {
            assertThat(server.server.runtimeName()).isEqualTo(runtime);
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                String first = create(dev);
                create(dev);
                StatusRuntimeException refused = catchThrowableOfType(() -> create(dev), StatusRuntimeException.class);
                assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(refused.getStatus().getDescription())
                        .contains("this environment runs 2 sandboxes at once, the most one environment may (half of"
                                + " the 4 the server runs): terminate one first");
                // a refused create that asked for a workload identity leaves no token behind
                long identities = identities(dataDir);
                StatusRuntimeException withIdentity = catchThrowableOfType(
                        () -> sandboxes(dev)
                                .createSandbox(CreateSandboxRequest.newBuilder()
                                        .setSpec(ChalkContainerSpec.newBuilder()
                                                .setChalkWorkloadIdentity(ChalkWorkloadIdentity.getDefaultInstance()))
                                        .build()),
                        StatusRuntimeException.class);
                assertThat(withIdentity.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(identities(dataDir)).isEqualTo(identities);

                // the other half is the other environments'
                String prodFirst = create(prod);
                create(prod);

                // a place is free as soon as the terminate answers: creates made on that answer, many in a row
                String last = first;
                for (int i = 0; i < 10; i++) {
                    terminate(dev, last);
                    last = create(dev);
                }

                // and as soon as a sandbox is seen to have ended by its lifetime running out
                terminate(prod, prodFirst);
                String brief = sandboxes(prod)
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setSpec(ChalkContainerSpec.newBuilder().setLifetime(Durations.fromMillis(500)))
                                .build())
                        .getSandbox()
                        .getId();
                Awaitility.await()
                        .atMost(Duration.ofSeconds(30))
                        .until(() -> sandboxes(prod)
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setId(brief)
                                        .build())
                                .getSandbox()
                                .getStatusMessage()
                                .contains("ran out"));
                create(prod);
            } finally {
                dev.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                prod.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    /** The workload identities the server keeps (a directory each, its token refreshed until released). */
    private static long identities(Path dataDir) throws java.io.IOException {
        try (var dirs = java.nio.file.Files.list(dataDir.resolve("identity"))) {
            return dirs.count();
        }
    }

    private static SandboxServiceGrpc.SandboxServiceBlockingStub sandboxes(ManagedChannel channel) {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private static String create(ManagedChannel channel) {
        return sandboxes(channel)
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setSpec(ChalkContainerSpec.getDefaultInstance())
                        .build())
                .getSandbox()
                .getId();
    }

    private static void terminate(ManagedChannel channel, String id) {
        sandboxes(channel)
                .terminateSandbox(TerminateSandboxRequest.newBuilder().setId(id).build());
    }
}
