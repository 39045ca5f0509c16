package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A function with a kept-warm replica survives a server restart, and is deleted with its scaling group. */
class FunctionLifecycleTest {

    @TempDir
    Path dir;

    private static ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceBlockingStub catalog(
            RunningServer s) {
        return ExternalFunctionCatalogServiceGrpc.newBlockingStub(s.channel).withDeadlineAfter(90, TimeUnit.SECONDS);
    }

    private static int ready(RunningServer s) {
        return catalog(s)
                .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                        .setFunctionName("survivor")
                        .setIncludeScalingGroup(true)
                        .build())
                .getScalingGroup()
                .getReadyReplicas();
    }

    private static String echo(RunningServer s) {
        return catalog(s)
                .callExternalFunction(CallExternalFunctionRequest.newBuilder()
                        .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("survivor"))
                        .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                .setName("echo")
                                .setFeatherStream(ByteString.copyFromUtf8("ping")))
                        .build())
                .getRemoteCallResponse()
                .getFeatherStream()
                .toStringUtf8();
    }

    @Test
    void survivesRestartAndIsDeletedWithItsGroup() throws Exception {
        TestCode code = new TestCode("warm");
        CreateExternalFunctionVersionRequest request = CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName("survivor")
                .setSpec(ScalingGroupSpec.newBuilder()
                        .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                        .setScalingSpec(
                                ScalingSpec.newBuilder().setMinReplicas(1).setMaxReplicas(1)))
                .setConfig(FunctionConfig.newBuilder()
                        .putOptions("chalk_compute.code", code.manifestDigest)
                        .putOptions("chalk_compute.functions", "echo=t.W#echo"))
                .build();
        String versionId;
        try (RunningServer s = RunningServer.start(dir)) {
            code.upload(s.channel);
            versionId = catalog(s)
                    .createExternalFunctionVersion(request)
                    .getExternalFunctionVersion()
                    .getId();
            await().atMost(Duration.ofSeconds(30)).until(() -> ready(s) == 1); // min_replicas starts without a call
            assertThat(echo(s)).startsWith("warm|fnw-").endsWith("|ping");
            assertThatThrownBy(() -> catalog(s)
                            .deleteExternalFunctionVersion(DeleteExternalFunctionVersionRequest.newBuilder()
                                    .setId(versionId)
                                    .build()))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription()).contains("serves the function's traffic");
                    });
            assertThatThrownBy(() -> ScalingGroupManagerServiceGrpc.newBlockingStub(s.channel)
                            .deleteScalingGroup(DeleteScalingGroupRequest.newBuilder()
                                    .setName("survivor")
                                    .build()))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription()).contains("DeleteExternalFunction");
                    });
        }
        try (RunningServer s = RunningServer.start(dir)) {
            await().atMost(Duration.ofSeconds(30)).until(() -> ready(s) == 1);
            assertThat(echo(s)).startsWith("warm|").endsWith("|ping");
            assertThat(catalog(s)
                            .createExternalFunctionVersion(request)
                            .getExternalFunctionVersion()
                            .getId())
                    .isEqualTo(versionId);
            assertThat(catalog(s)
                            .listExternalFunctionVersions(ListExternalFunctionVersionsRequest.newBuilder()
                                    .setFunctionName("survivor")
                                    .build())
                            .getEntriesCount())
                    .isEqualTo(1);

            catalog(s)
                    .deleteExternalFunction(DeleteExternalFunctionRequest.newBuilder()
                            .setFunctionName("survivor")
                            .build());
            assertThatThrownBy(() -> catalog(s)
                            .getExternalFunction(GetExternalFunctionRequest.newBuilder()
                                    .setFunctionName("survivor")
                                    .build()))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
            assertThat(catalog(s)
                            .listExternalFunctions(ListExternalFunctionsRequest.getDefaultInstance())
                            .getFunctionsCount())
                    .isZero();
            assertThat(ScalingGroupManagerServiceGrpc.newBlockingStub(s.channel)
                            .listScalingGroups(ListScalingGroupsRequest.getDefaultInstance())
                            .getScalingGroupsCount())
                    .isZero();
            try (var runDirs = java.nio.file.Files.list(dir.resolve("functions").resolve("run"))) {
                assertThat(runDirs.toList()).isEmpty(); // the replica's socket directory went with it
            }
        }
    }
}
