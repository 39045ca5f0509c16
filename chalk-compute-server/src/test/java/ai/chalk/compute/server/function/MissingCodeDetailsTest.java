package ai.chalk.compute.server.function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.chalk.compute.proto.blob.v1.BlobErrorReason;
import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.FunctionConfig;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingSpec;
import ai.chalk.compute.server.RunningServer;
import com.google.protobuf.Any;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import com.google.rpc.PreconditionFailure;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A deploy whose code is not all on the server is refused over TCP with the missing blobs as structured error
 * details (google.rpc ErrorInfo and PreconditionFailure, as grpc-java's error-details example sends them), beside
 * the readable message; once the code is uploaded the same request creates the version.
 */
class MissingCodeDetailsTest {

    @TempDir
    Path dir;

    @Test
    void aDeployWithoutItsCodeCarriesTheMissingBlobsAsErrorDetails() throws Exception {
        try (RunningServer server = RunningServer.start(dir)) {
            var catalog = ExternalFunctionCatalogServiceGrpc.newBlockingStub(server.channel)
                    .withDeadlineAfter(60, TimeUnit.SECONDS);
            TestCode code = new TestCode("details", false);
            String entry = code.blobs.keySet().iterator().next();
            CreateExternalFunctionVersionRequest request = CreateExternalFunctionVersionRequest.newBuilder()
                    .setFunctionName("detailed")
                    .setSpec(ScalingGroupSpec.newBuilder()
                            .setContainerSpec(ChalkContainerSpec.getDefaultInstance())
                            .setScalingSpec(
                                    ScalingSpec.newBuilder().setMinReplicas(0).setMaxReplicas(1)))
                    .setConfig(FunctionConfig.newBuilder()
                            .putOptions("chalk_compute.code", code.manifestDigest)
                            .putOptions("chalk_compute.functions", "echo=t.W#echo")
                            .putOptions("chalk_compute.worker", "plain"))
                    .build();

            // nothing uploaded: the manifest itself is missing
            assertMissing(() -> catalog.createExternalFunctionVersion(request), List.of(code.manifestDigest));

            // the manifest uploaded: what it names is missing
            assertThat(code.upload(server.channel, code.manifestDigest::equals)).isEqualTo(1);
            assertMissing(() -> catalog.createExternalFunctionVersion(request), List.of(entry));

            assertThat(code.upload(server.channel)).isEqualTo(1);
            assertThat(catalog.createExternalFunctionVersion(request)
                            .getExternalFunctionVersion()
                            .getVersion())
                    .isEqualTo(1);
        }
    }

    private static void assertMissing(Runnable deploy, List<String> digests) {
        assertThatThrownBy(deploy::run).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            com.google.rpc.Status status = StatusProto.fromThrowable(e);
            assertThat(status).as("the status carries google.rpc details").isNotNull();
            assertThat(status.getCode()).isEqualTo(Code.FAILED_PRECONDITION_VALUE);
            assertThat(status.getMessage()).isEqualTo("missing code blobs: " + String.join(",", digests));
            assertThat(e.getStatus().getDescription()).isEqualTo(status.getMessage());
            List<Any> details = status.getDetailsList();
            assertThat(details).hasSize(2);
            assertThat(details.get(0).is(ErrorInfo.class)).isTrue();
            assertThat(details.get(1).is(PreconditionFailure.class)).isTrue();
            try {
                ErrorInfo info = details.get(0).unpack(ErrorInfo.class);
                assertThat(info.getReason()).isEqualTo(BlobErrorReason.MISSING_CODE_BLOBS.name());
                assertThat(info.getDomain()).isEqualTo("chalk_compute.blob.v1");
                PreconditionFailure failure = details.get(1).unpack(PreconditionFailure.class);
                assertThat(failure.getViolationsList())
                        .allSatisfy(v -> assertThat(v.getType()).isEqualTo("CODE_BLOB"))
                        .extracting(PreconditionFailure.Violation::getSubject)
                        .containsExactlyElementsOf(digests);
            } catch (com.google.protobuf.InvalidProtocolBufferException x) {
                throw new AssertionError(x);
            }
        });
    }
}
