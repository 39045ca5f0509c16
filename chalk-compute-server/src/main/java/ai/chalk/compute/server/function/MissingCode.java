package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.blob.v1.BlobErrorReason;
import ai.chalk.compute.server.blob.BlobDigest;
import com.google.protobuf.Any;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import com.google.rpc.PreconditionFailure;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The answer to a deploy whose code is not all on the server: {@code FAILED_PRECONDITION} with the readable
 * {@code missing code blobs: sha256:…,sha256:…}, and as structured details (grpc-java's error-details model, read
 * with {@link StatusProto#fromThrowable}) a {@code google.rpc.ErrorInfo} of reason
 * {@link BlobErrorReason#MISSING_CODE_BLOBS} in domain {@code chalk_compute.blob.v1}, and a
 * {@code google.rpc.PreconditionFailure} with one {@value #VIOLATION_TYPE} violation per missing blob, its digest as
 * the subject. Clients act on the details; the message is for people.
 */
final class MissingCode {

    /** The ErrorInfo domain: the package of {@link BlobErrorReason}, {@code chalk_compute.blob.v1}. */
    static final String DOMAIN = BlobErrorReason.getDescriptor().getFile().getPackage();
    /** The type of each PreconditionFailure violation: one code blob the server lacks. */
    static final String VIOLATION_TYPE = "CODE_BLOB";

    private MissingCode() {}

    /** The status exception refusing a deploy for want of these blobs. */
    static StatusRuntimeException refusal(List<BlobDigest> missing) {
        PreconditionFailure.Builder violations = PreconditionFailure.newBuilder();
        for (BlobDigest digest : missing) {
            violations.addViolations(PreconditionFailure.Violation.newBuilder()
                    .setType(VIOLATION_TYPE)
                    .setSubject(digest.toString())
                    .setDescription("not on the server: upload it with chalk_compute.blob.v1.BlobService/UploadBlob"));
        }
        return StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                .setCode(Code.FAILED_PRECONDITION_VALUE)
                .setMessage("missing code blobs: "
                        + missing.stream().map(BlobDigest::toString).collect(Collectors.joining(",")))
                .addDetails(Any.pack(ErrorInfo.newBuilder()
                        .setReason(BlobErrorReason.MISSING_CODE_BLOBS.name())
                        .setDomain(DOMAIN)
                        .build()))
                .addDetails(Any.pack(violations.build()))
                .build());
    }
}
