package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.container.v1.SecretRef;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.proto.server.v1.EnvironmentSecretsServiceGrpc;
import ai.chalk.compute.proto.server.v1.UpsertSecretRequest;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A function's secret_refs reach its replicas' environment as they start, and a missing secret is refused at deploy. */
class FunctionSecretsTest {

    @Test
    void aSecretReachesTheReplicasOfAFunctionAndAMissingOneIsRefusedAtDeploy(@TempDir Path dir) throws Exception {
        String value = "function-secret-" + UUID.randomUUID();
        try (RunningServer server = RunningServer.start(dir, b -> b.workerReadyTimeout(Duration.ofSeconds(30)))) {
            var catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(server.channel)
                    .withDeadlineAfter(90, TimeUnit.SECONDS);
            TestCode code = new TestCode("secrets");
            code.upload(server.channel);
            CreateExternalFunctionVersionRequest request = CreateExternalFunctionVersionRequest.newBuilder()
                    .setFunctionName("with-secret")
                    .setSpec(ScalingGroupSpec.newBuilder()
                            .setContainerSpec(ChalkContainerSpec.newBuilder()
                                    .addSecretRefs(SecretRef.newBuilder()
                                            .setSecretName("FN_SECRET")
                                            .putAliases("FN_SECRET", "GREETING")))
                            .setScalingSpec(
                                    ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                    .setConfig(FunctionConfig.newBuilder()
                            .putOptions("chalk_compute.code", code.manifestDigest)
                            .putOptions("chalk_compute.functions", "probe=t.W#probe")
                            .putOptions("chalk_compute.worker", "plain"))
                    .build();
            assertThatThrownBy(() -> catalog.createExternalFunctionVersion(request))
                    .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                        assertThat(e.getStatus().getDescription()).contains("secret FN_SECRET does not exist");
                    });
            EnvironmentSecretsServiceGrpc.newBlockingStub(server.channel)
                    .upsertSecret(UpsertSecretRequest.newBuilder()
                            .setName("FN_SECRET")
                            .setValue(value)
                            .build());
            catalog.createExternalFunctionVersion(request);
            String probe = catalog.callExternalFunction(CallExternalFunctionRequest.newBuilder()
                            .setFunction(ExternalFunctionVersionKey.newBuilder().setFunctionName("with-secret"))
                            .setRemoteCallRequest(CallFunctionRequest.newBuilder()
                                    .setName("probe")
                                    .setFeatherStream(ByteString.EMPTY))
                            .build())
                    .getRemoteCallResponse()
                    .getFeatherStream()
                    .toStringUtf8();
            assertThat(probe).contains(";GREETING=" + value + ";");
        }
    }
}
