package ai.chalk.compute.server.python;

import ai.chalk.compute.proto.artifactstore.v1.Artifact;
import ai.chalk.compute.proto.artifactstore.v1.ArtifactInlineContent;
import ai.chalk.compute.proto.artifactstore.v1.ArtifactKind;
import ai.chalk.compute.proto.artifactstore.v1.ArtifactOrigin;
import ai.chalk.compute.proto.artifactstore.v1.ArtifactProducer;
import ai.chalk.compute.proto.artifactstore.v1.ArtifactStatus;
import ai.chalk.compute.proto.artifactstore.v1.ImageDetails;
import ai.chalk.compute.proto.artifactstore.v1.SandboxExecOrigin;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.util.Timestamps;
import java.io.UncheckedIOException;

/**
 * Artifacts of an execution as Chalk's {@code Artifact}: each representation of a displayed value is one, inline,
 * with {@code metadata.display} ({@code execute_result} or {@code display_data}) and {@code metadata.bundle} (the
 * representations of one value share it), so a client can rebuild Jupyter-style MIME bundles. The exception that
 * ended a snippet is one more, from the system, of type {@link #ERROR_TYPE}.
 */
final class PythonArtifacts {

    /** The media type of the error artifact: {@code {"ename", "evalue", "traceback"}} as Jupyter's error message. */
    static final String ERROR_TYPE = "application/vnd.chalk.python-error+json";

    private static final ObjectMapper JSON = new ObjectMapper();

    private PythonArtifacts() {}

    static Artifact of(String sandboxId, String executionId, int seq, DriverEvent.Artifact a) {
        ArtifactKind kind = a.chart()
                ? ArtifactKind.ARTIFACT_KIND_CHART
                : a.mime().startsWith("image/")
                        ? ArtifactKind.ARTIFACT_KIND_IMAGE
                        : a.mime().equals("text/html")
                                ? ArtifactKind.ARTIFACT_KIND_HTML
                                : ArtifactKind.ARTIFACT_KIND_FILE;
        Artifact.Builder b = base(sandboxId, executionId, seq)
                .setName(a.name())
                .setKind(kind)
                .setProducer(ArtifactProducer.ARTIFACT_PRODUCER_USER)
                .setContentType(a.mime())
                .setInline(ArtifactInlineContent.newBuilder().setData(ByteString.copyFrom(a.data())))
                .setMetadata(Struct.newBuilder()
                        .putFields(
                                "display",
                                Value.newBuilder().setStringValue(a.role()).build())
                        .putFields(
                                "bundle",
                                Value.newBuilder().setNumberValue(a.bundle()).build()));
        pngSize(a.data()).ifPresent(b::setImage);
        return b.build();
    }

    static Artifact error(String sandboxId, String executionId, int seq, DriverEvent.CodeError e) {
        ObjectNode body = JSON.createObjectNode()
                .put("ename", e.name())
                .put("evalue", e.value())
                .put("traceback", e.traceback());
        byte[] data;
        try {
            data = JSON.writeValueAsBytes(body);
        } catch (com.fasterxml.jackson.core.JsonProcessingException ex) {
            throw new UncheckedIOException(ex);
        }
        return base(sandboxId, executionId, seq)
                .setName("error.json")
                .setKind(ArtifactKind.ARTIFACT_KIND_FILE)
                .setProducer(ArtifactProducer.ARTIFACT_PRODUCER_SYSTEM)
                .setContentType(ERROR_TYPE)
                .setInline(ArtifactInlineContent.newBuilder().setData(ByteString.copyFrom(data)))
                .build();
    }

    private static Artifact.Builder base(String sandboxId, String executionId, int seq) {
        return Artifact.newBuilder()
                .setId(executionId + "-" + seq)
                .setOrigin(ArtifactOrigin.newBuilder()
                        .setSandboxExec(SandboxExecOrigin.newBuilder()
                                .setSandboxId(sandboxId)
                                .setExecutionId(executionId)))
                .setStatus(ArtifactStatus.ARTIFACT_STATUS_UPLOADED)
                .setCreatedAt(Timestamps.fromMillis(System.currentTimeMillis()));
    }

    /** Width and height from a PNG's IHDR chunk, when the bytes are a PNG. */
    static java.util.Optional<ImageDetails> pngSize(byte[] data) {
        byte[] signature = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        if (data.length < 24 || !java.util.Arrays.equals(data, 0, 8, signature, 0, 8)) {
            return java.util.Optional.empty();
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(data);
        return java.util.Optional.of(ImageDetails.newBuilder()
                .setWidth(b.getInt(16))
                .setHeight(b.getInt(20))
                .build());
    }
}
