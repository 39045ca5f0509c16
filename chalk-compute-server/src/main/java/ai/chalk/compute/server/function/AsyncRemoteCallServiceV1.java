package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.runtime.v1.AsyncRemoteCallServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.EnqueueRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.EnqueueRemoteCallResponse;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallResponse;
import ai.chalk.compute.proto.runtime.v1.PurgeQueueRequest;
import ai.chalk.compute.proto.runtime.v1.PurgeQueueResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Optional;

/**
 * {@code chalk.runtime.v1.AsyncRemoteCallService}: queued calls. {@code EnqueueRemoteCall.name} names a deployed
 * function (its current version) of the caller's environment ({@link Caller}), called by that same name; polls answer
 * results until read, to callers of the same environment only.
 */
public final class AsyncRemoteCallServiceV1 extends AsyncRemoteCallServiceGrpc.AsyncRemoteCallServiceImplBase {

    private final FunctionDeployments deployments;
    private final FunctionCalls calls;

    public AsyncRemoteCallServiceV1(FunctionDeployments deployments, FunctionCalls calls) {
        this.deployments = deployments;
        this.calls = calls;
    }

    @Override
    public void enqueueRemoteCall(
            EnqueueRemoteCallRequest request, StreamObserver<EnqueueRemoteCallResponse> observer) {
        StatusErrors.unary(observer, () -> {
            if (!request.getArgs().hasFeatherBytes()) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("args: give feather_bytes; storage objects are not" + " served here")
                        .asRuntimeException();
            }
            VersionRecord v = deployments.version(
                    environment(),
                    ExternalFunctionVersionKey.newBuilder()
                            .setFunctionName(request.getName())
                            .build(),
                    false);
            return EnqueueRemoteCallResponse.newBuilder()
                    .setCallId(calls.enqueue(
                            v,
                            request.getName(),
                            request.getName(),
                            request.getArgs().getFeatherBytes()))
                    .build();
        });
    }

    @Override
    public void pollRemoteCall(PollRemoteCallRequest request, StreamObserver<PollRemoteCallResponse> observer) {
        StatusErrors.unary(observer, () -> calls.poll(environment(), request.getCallId()));
    }

    @Override
    public void purgeQueue(PurgeQueueRequest request, StreamObserver<PurgeQueueResponse> observer) {
        StatusErrors.unary(observer, () -> {
            Optional<String> function = switch (request.getRequestCase()) {
                case FUNCTION_NAME -> Optional.of(request.getFunctionName());
                case ALL -> Optional.empty();
                case REQUEST_NOT_SET ->
                    throw Status.INVALID_ARGUMENT
                            .withDescription("give function_name or all")
                            .asRuntimeException();
            };
            PurgeQueueResponse.Builder b = PurgeQueueResponse.newBuilder();
            calls.store().purgePending(environment(), function).forEach(b::putItemsRemovedByFunction);
            return b.build();
        });
    }

    private static String environment() {
        return Caller.current().environment();
    }
}
