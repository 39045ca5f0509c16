package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.LocalRuntimeOptions;
import ai.chalk.compute.server.RunningServer;
import ai.chalk.compute.server.runtime.local.SandboxDefaults;
import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant at its share of the server's sandboxes deploys a function and calls it: its replicas started on the
 * runtime, past the environment's share, counted in the server's limit only, so that the tenant filled the rest of the
 * server with replicas and every other environment's create was refused. A replica now takes its place among its
 * environment's sandboxes, and gives it back when it stops.
 */
class ReplicaSharesSecurityTest {

    @Test
    void aReplicaCountsAmongItsEnvironmentsSandboxes(@TempDir Path dataDir) throws Exception {
        SandboxDefaults d = SandboxDefaults.STANDARD;
        LocalRuntimeOptions options = LocalRuntimeOptions.builder()
                .defaults(new SandboxDefaults(d.memoryBytes(), d.layerBytes(), d.pidsMax(), d.openFiles(), 4))
                .poolSize(0)
                .build();
        try (RunningServer server =
                RunningServer.start(dataDir, b -> b.runtime(options).workerReadyTimeout(Duration.ofSeconds(60)))) {
            ManagedChannel dev = RunningServer.authenticated(server.server, "dev");
            ManagedChannel prod = RunningServer.authenticated(server.server, "prod");
            try {
                String first = create(dev);
                create(dev);
                TestCode code = new TestCode("shares");
                code.upload(dev);
                catalog(dev).createExternalFunctionVersion(deploy(code));

                StatusRuntimeException refused = catchThrowableOfType(() -> echo(dev), StatusRuntimeException.class);
                assertThat(refused)
                        .as("a call that needs a replica past the environment's share fails")
                        .isNotNull();
                assertThat(refused.getStatus().getDescription())
                        .contains("this environment runs 2 sandboxes at once, the most one environment may (half of"
                                + " the 4 the server runs): terminate one first");

                // the other half is still the other environments'
                create(prod);
                create(prod);

                // a place the tenant frees is its replica's; its sandboxes and replica together stay at its share
                terminate(dev, first);
                assertThat(echo(dev)).endsWith("|ping");
                // a replica that dies gives its place back before the call that lost it answers: the next call's
                // replica finds it free
                StatusRuntimeException crashed =
                        catchThrowableOfType(() -> call(dev, "crash"), StatusRuntimeException.class);
                assertThat(crashed.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(echo(dev)).endsWith("|ping");
                StatusRuntimeException full = catchThrowableOfType(() -> create(dev), StatusRuntimeException.class);
                assertThat(full.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(full.getStatus().getDescription()).contains("this environment runs 2 sandboxes at once");
            } finally {
                dev.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
                prod.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    private static CreateExternalFunctionVersionRequest deploy(TestCode code) {
        return CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName("shared")
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                        .setScalingSpec(
                                ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", "echo=t.W#echo,crash=t.W#crash")
                        .putOptions("chalk_compute.worker", "plain"))
                .build();
    }

    private static ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog(
            ManagedChannel channel) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(channel).withDeadlineAfter(90, TimeUnit.SECONDS);
    }

    private static String echo(ManagedChannel channel) {
        return call(channel, "echo");
    }

    private static String call(ManagedChannel channel, String function) {
        return catalog(channel)
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("shared"))
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName(function)
                                .setFeatherStream(ByteString.copyFromUtf8("ping")))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
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
