package ai.chalk.compute.function.deploy;

import ai.chalk.compute.error.RemoteExecutionException;
import ai.chalk.compute.proto.blob.v1.BlobErrorReason;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunction;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersion;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsEntry;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.AsyncRemoteCallServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.CallFunctionRequest;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.EnqueueRemoteCallResponse;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallRequest;
import ai.chalk.compute.proto.runtime.v1.PollRemoteCallResponse;
import ai.chalk.compute.proto.runtime.v1.RemoteCallServiceGrpc;
import ai.chalk.compute.proto.runtime.v1.RemoteCallStatus;
import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import com.google.protobuf.Any;
import com.google.protobuf.Timestamp;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import com.google.rpc.PreconditionFailure;
import io.grpc.Channel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A stand-in catalog that records the requests the client sends, so the client's request building and retry logic can
 * be checked. The REAL catalog (version reuse, scaling groups, routing to replicas) is the server module's and is
 * tested there. This one keeps only what the client's flows need: a missing-code-blobs refusal until the manifest is
 * in a real {@link BlobStore}, one version per ensure request, traffic switching, and calls forwarded to a real
 * {@code FunctionWorker} over its Unix socket, relaying the worker's status and trailers and adding {@code chalk-call-id}.
 */
public final class RecordingCatalogForTests
        extends ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceImplBase {

    /** Every ensure request received, in order. */
    public final List<CreateExternalFunctionVersionRequest> ensures = new CopyOnWriteArrayList<>();
    /** Every traffic update received, in order. */
    public final List<UpdateExternalFunctionRequest> updates = new CopyOnWriteArrayList<>();
    /** Every delete received, in order. */
    public final List<DeleteExternalFunctionRequest> deletes = new CopyOnWriteArrayList<>();

    private final BlobStore blobs;
    private final Channel worker;
    private final List<ExternalFunctionVersion> versions = new CopyOnWriteArrayList<>();
    private final Map<String, String> current = new ConcurrentHashMap<>(); // function id -> version id
    private final Map<String, CompletableFuture<CallFunctionResponse>> queued = new ConcurrentHashMap<>();
    private final AtomicInteger calls = new AtomicInteger();

    /**
     * @param blobs  the store the real BlobService writes to
     * @param worker a channel to a real worker
     */
    public RecordingCatalogForTests(BlobStore blobs, Channel worker) {
        this.blobs = blobs;
        this.worker = worker;
    }

    @Override
    public void createExternalFunctionVersion(
            CreateExternalFunctionVersionRequest request, StreamObserver<CreateExternalFunctionVersionResponse> out) {
        ensures.add(request);
        String code = request.getConfig().getOptionsOrDefault("chalk_compute.code", "");
        if (blobs.size(BlobDigest.parse("code", code)).isEmpty()) {
            // as the real catalog answers (its test checks the same shape): the details say why, the text is for people
            out.onError(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Code.FAILED_PRECONDITION_VALUE)
                    .setMessage("missing code blobs: " + code)
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setDomain("chalk_compute.blob.v1")
                            .setReason(BlobErrorReason.MISSING_CODE_BLOBS.name())
                            .build()))
                    .addDetails(Any.pack(PreconditionFailure.newBuilder()
                            .addViolations(PreconditionFailure.Violation.newBuilder()
                                    .setType("CODE_BLOB")
                                    .setSubject(code))
                            .build()))
                    .build()));
            return;
        }
        String functionId = "fn-" + request.getFunctionName();
        int number = (int) versions.stream()
                        .filter(v -> v.getFunctionId().equals(functionId))
                        .count()
                + 1;
        ExternalFunctionVersion version = ExternalFunctionVersion.newBuilder()
                .setId("efv-" + request.getFunctionName() + "-" + number)
                .setFunctionId(functionId)
                .setFunctionName(request.getFunctionName())
                .setVersion(number)
                .setScalingGroupName(request.getFunctionName())
                .setScalingGroupRevisionId("sgr-" + number)
                .setCreatedAt(Timestamp.newBuilder().setSeconds(1_000 + number))
                .setInputArrowSchema(request.getInputArrowSchema())
                .setOutputArrowSchema(request.getOutputArrowSchema())
                .setConfig(request.getConfig())
                .build();
        versions.add(version);
        current.put(functionId, version.getId());
        out.onNext(CreateExternalFunctionVersionResponse.newBuilder()
                .setExternalFunctionVersion(version)
                .build());
        out.onCompleted();
    }

    @Override
    public void getExternalFunction(
            GetExternalFunctionRequest request, StreamObserver<GetExternalFunctionResponse> out) {
        String id = request.hasFunctionId() ? request.getFunctionId() : "fn-" + request.getFunctionName();
        String currentId = current.get(id);
        if (currentId == null) {
            out.onError(Status.NOT_FOUND.withDescription("function " + id).asRuntimeException());
            return;
        }
        out.onNext(GetExternalFunctionResponse.newBuilder()
                .setExternalFunction(ExternalFunction.newBuilder()
                        .setId(id)
                        .setName(id.substring(3))
                        .setCurrentVersion(version(currentId)))
                .build());
        out.onCompleted();
    }

    @Override
    public void getExternalFunctionVersion(
            GetExternalFunctionVersionRequest request, StreamObserver<GetExternalFunctionVersionResponse> out) {
        out.onNext(GetExternalFunctionVersionResponse.newBuilder()
                .setExternalFunctionVersion(version(request.getId()))
                .build());
        out.onCompleted();
    }

    @Override
    public void listExternalFunctionVersions(
            ListExternalFunctionVersionsRequest request, StreamObserver<ListExternalFunctionVersionsResponse> out) {
        var response = ListExternalFunctionVersionsResponse.newBuilder();
        List<ExternalFunctionVersion> newestFirst = new ArrayList<>(versions);
        java.util.Collections.reverse(newestFirst);
        newestFirst.stream()
                .filter(v -> v.getFunctionId().equals(request.getFunctionId()))
                .forEach(v -> response.addEntries(
                        ListExternalFunctionVersionsEntry.newBuilder().setExternalFunctionVersion(v)));
        out.onNext(response.build());
        out.onCompleted();
    }

    @Override
    public void updateExternalFunction(
            UpdateExternalFunctionRequest request, StreamObserver<UpdateExternalFunctionResponse> out) {
        updates.add(request);
        current.put(
                request.getExternalFunctionId(),
                request.getTraffic().getTargets(0).getExternalFunctionVersionId());
        out.onNext(UpdateExternalFunctionResponse.getDefaultInstance());
        out.onCompleted();
    }

    @Override
    public void deleteExternalFunction(
            DeleteExternalFunctionRequest request, StreamObserver<DeleteExternalFunctionResponse> out) {
        deletes.add(request);
        current.remove("fn-" + request.getFunctionName());
        out.onNext(DeleteExternalFunctionResponse.getDefaultInstance());
        out.onCompleted();
    }

    @Override
    public void callExternalFunction(
            CallExternalFunctionRequest request, StreamObserver<CallExternalFunctionResponse> out) {
        try {
            callOrQueue(request, out);
        } catch (Exception e) {
            out.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
        }
    }

    private void callOrQueue(CallExternalFunctionRequest request, StreamObserver<CallExternalFunctionResponse> out)
            throws Exception {
        String callId = "call-" + calls.incrementAndGet();
        if (request.hasEnqueueRemoteCallRequest()) {
            var enqueue = request.getEnqueueRemoteCallRequest();
            CallFunctionRequest call = CallFunctionRequest.newBuilder()
                    .setName(enqueue.getName())
                    .setFeatherStream(enqueue.getArgs().getFeatherBytes())
                    .build();
            // a queued call outlives the request that queued it
            queued.put(
                    callId,
                    io.grpc.Context.current().fork().wrap(() -> forward(call)).call());
            out.onNext(CallExternalFunctionResponse.newBuilder()
                    .setEnqueueRemoteCallResponse(
                            EnqueueRemoteCallResponse.newBuilder().setCallId(callId))
                    .build());
            out.onCompleted();
            return;
        }
        try {
            CallFunctionResponse response =
                    forward(request.getRemoteCallRequest()).get(60, TimeUnit.SECONDS);
            out.onNext(CallExternalFunctionResponse.newBuilder()
                    .setRemoteCallResponse(response)
                    .build());
            out.onCompleted();
        } catch (java.util.concurrent.ExecutionException e) {
            Metadata trailers = new Metadata();
            Metadata fromWorker = Status.trailersFromThrowable(e.getCause());
            if (fromWorker != null) {
                trailers.merge(fromWorker);
            }
            trailers.put(RemoteExecutionException.CALL_ID_TRAILER, callId);
            out.onError(Status.fromThrowable(e.getCause()).asRuntimeException(trailers));
        } catch (Exception e) {
            out.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
        }
    }

    /** {@code AsyncRemoteCallService.PollRemoteCall} over the calls queued here. */
    public final class Poller extends AsyncRemoteCallServiceGrpc.AsyncRemoteCallServiceImplBase {
        @Override
        public void pollRemoteCall(PollRemoteCallRequest request, StreamObserver<PollRemoteCallResponse> out) {
            CompletableFuture<CallFunctionResponse> call = queued.get(request.getCallId());
            var response = PollRemoteCallResponse.newBuilder();
            if (!call.isDone()) {
                response.setStatus(RemoteCallStatus.REMOTE_CALL_STATUS_RUNNING);
            } else if (call.isCompletedExceptionally()) {
                Throwable failure = call.handle((r, t) -> t).join();
                Metadata trailers = Status.trailersFromThrowable(failure);
                var error = trailers == null ? null : trailers.get(RemoteExecutionException.ERROR_TRAILER);
                if (error == null) {
                    out.onError(Status.INTERNAL
                            .withDescription(
                                    "call failed without chalk-error-bin: " + failure + " trailers " + trailers)
                            .asRuntimeException());
                    return;
                }
                response.setStatus(RemoteCallStatus.REMOTE_CALL_STATUS_FAILED).addErrors(error);
            } else {
                response.setStatus(RemoteCallStatus.REMOTE_CALL_STATUS_COMPLETED)
                        .addResults(call.join());
            }
            out.onNext(response.build());
            out.onCompleted();
        }
    }

    private CompletableFuture<CallFunctionResponse> forward(CallFunctionRequest request) {
        CompletableFuture<CallFunctionResponse> done = new CompletableFuture<>();
        StreamObserver<CallFunctionRequest> in = RemoteCallServiceGrpc.newStub(worker)
                .callFunction(new StreamObserver<>() {
                    @Override
                    public void onNext(CallFunctionResponse value) {
                        done.complete(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        done.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                        done.completeExceptionally(
                                Status.INTERNAL.withDescription("no response").asRuntimeException());
                    }
                });
        in.onNext(request);
        in.onCompleted();
        return done;
    }

    private ExternalFunctionVersion version(String id) {
        return versions.stream()
                .filter(v -> v.getId().equals(id))
                .findFirst()
                .orElseThrow(
                        () -> Status.NOT_FOUND.withDescription("version " + id).asRuntimeException());
    }
}
