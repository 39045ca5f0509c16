package ai.chalk.compute.function.deploy;

import ai.chalk.compute.proto.blob.v1.BlobErrorReason;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import com.google.rpc.PreconditionFailure;
import com.google.rpc.Status;
import io.grpc.protobuf.StatusProto;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads the server's answer that a deploy's code is not all uploaded yet: status {@code FAILED_PRECONDITION} with
 * the structured details of {@code chalk_compute.blob.v1.BlobErrorReason.MISSING_CODE_BLOBS} (a
 * {@code google.rpc.ErrorInfo} of that reason in domain {@code chalk_compute.blob.v1}, and a
 * {@code google.rpc.PreconditionFailure} naming each missing blob).
 *
 * <p>The status message ({@code missing code blobs: ...}) is not matched. No text fallback is kept on purpose: this
 * answer is not Chalk's. Chalk's contract (its {@code ExternalFunctionCatalogService}) has no code blobs at all, it
 * reaches a version's source through a volume ({@code GetExternalFunctionVersionSource}); the blob upload protocol
 * is this project's own {@code chalk_compute.blob.v1}, and its server sends these details with every such refusal.
 */
final class MissingCode {

    private static final String DOMAIN =
            BlobErrorReason.getDescriptor().getFile().getPackage();
    private static final String VIOLATION_TYPE = "CODE_BLOB";

    private MissingCode() {}

    /**
     * The digests of the blobs the server said it lacks, when the failure is that answer.
     *
     * @param failure the exception a catalog call threw
     * @return the digests (empty when the server named none), or empty when the failure is anything else
     */
    static Optional<List<String>> digests(Throwable failure) {
        Status status = StatusProto.fromThrowable(failure);
        if (status == null || status.getCode() != Code.FAILED_PRECONDITION_VALUE) {
            return Optional.empty();
        }
        boolean missingCode = false;
        List<String> digests = new ArrayList<>();
        for (Any detail : status.getDetailsList()) {
            try {
                if (detail.is(ErrorInfo.class)) {
                    ErrorInfo info = detail.unpack(ErrorInfo.class);
                    missingCode |= DOMAIN.equals(info.getDomain())
                            && BlobErrorReason.MISSING_CODE_BLOBS.name().equals(info.getReason());
                } else if (detail.is(PreconditionFailure.class)) {
                    detail.unpack(PreconditionFailure.class).getViolationsList().stream()
                            .filter(v -> VIOLATION_TYPE.equals(v.getType()))
                            .forEach(v -> digests.add(v.getSubject()));
                }
            } catch (InvalidProtocolBufferException e) {
                // a detail that does not parse says nothing we can act on
            }
        }
        return missingCode ? Optional.of(List.copyOf(digests)) : Optional.empty();
    }
}
