package ai.chalk.compute.server.function;

import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CallExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.CreateExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.DeleteExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionCatalogServiceGrpc;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionTrafficTarget;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionKey;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionSourceFile;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ExternalFunctionVersionSpec;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionSourceRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.GetExternalFunctionVersionSourceResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionScheduledRunsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionScheduledRunsResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsEntry;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionVersionsResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.ListExternalFunctionsResponse;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionRequest;
import ai.chalk.compute.proto.externalfunctioncatalog.v1.UpdateExternalFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.CallFunctionResponse;
import ai.chalk.compute.proto.runtime.v1.EnqueueRemoteCallResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.FunctionStore.FunctionRecord;
import ai.chalk.compute.server.store.FunctionStore.VersionRecord;
import ai.chalk.compute.server.worker.CodeManifest;
import ai.chalk.compute.server.worker.CodeSnapshots;
import ai.chalk.compute.server.worker.ReplicaPool;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.List;
import java.util.Optional;

/**
 * {@code chalk.externalfunctioncatalog.v1.ExternalFunctionCatalogService}: deploy (the protocol's ensure), rollback,
 * describe and delete functions and versions, and call them, in the caller's environment ({@link Caller}): another
 * environment's functions are never listed and answer NOT_FOUND, and a name is resolved among the caller's functions.
 */
public final class ExternalFunctionCatalogServiceV1
        extends ExternalFunctionCatalogServiceGrpc.ExternalFunctionCatalogServiceImplBase {

    private final FunctionDeployments deployments;
    private final FunctionCalls calls;
    private final CodeSnapshots code;
    private final FunctionViews views;

    public ExternalFunctionCatalogServiceV1(FunctionDeployments deployments, FunctionCalls calls, CodeSnapshots code) {
        this.deployments = deployments;
        this.calls = calls;
        this.code = code;
        this.views = new FunctionViews(deployments);
    }

    @Override
    public void createExternalFunctionVersion(
            CreateExternalFunctionVersionRequest request,
            StreamObserver<CreateExternalFunctionVersionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            FunctionDeployments.Deployed d = deployments.ensure(environment(), request);
            return CreateExternalFunctionVersionResponse.newBuilder()
                    .setExternalFunctionVersion(views.version(d.version()))
                    .setScalingGroup(deployments.groups().response(deployments.group(d.function())))
                    .build();
        });
    }

    @Override
    public void createExternalFunction(
            CreateExternalFunctionRequest request, StreamObserver<CreateExternalFunctionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            if (deployments
                    .store()
                    .liveFunctionNamed(environment(), request.getFunctionName())
                    .isPresent()) {
                throw Status.ALREADY_EXISTS
                        .withDescription("function \"" + request.getFunctionName() + "\" exists;"
                                + " deploy a version with CreateExternalFunctionVersion or UpdateExternalFunction")
                        .asRuntimeException();
            }
            FunctionDeployments.Deployed d =
                    deployments.ensure(environment(), versionRequest(request.getFunctionName(), request.getSpec()));
            return CreateExternalFunctionResponse.newBuilder()
                    .setExternalFunction(views.function(d.function()))
                    .build();
        });
    }

    @Override
    public void updateExternalFunction(
            UpdateExternalFunctionRequest request, StreamObserver<UpdateExternalFunctionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            FunctionRecord f = deployments.function(environment(), request.getExternalFunctionId(), "", false);
            if (request.hasSpec()) {
                f = deployments
                        .ensure(environment(), versionRequest(f.name(), request.getSpec()))
                        .function();
            } else if (request.hasTraffic()) {
                f = deployments.route(f, target(f, request.getTraffic().getTargetsList()));
            } else {
                throw Status.INVALID_ARGUMENT
                        .withDescription("give spec (a new version) or traffic (the version to" + " serve)")
                        .asRuntimeException();
            }
            return UpdateExternalFunctionResponse.newBuilder()
                    .setExternalFunction(views.function(f))
                    .build();
        });
    }

    private VersionRecord target(FunctionRecord f, List<ExternalFunctionTrafficTarget> targets) {
        List<ExternalFunctionTrafficTarget> serving = targets.stream()
                .filter(t -> t.getPercent() > 0 || targets.size() == 1)
                .toList();
        if (serving.size() != 1
                || (serving.get(0).getPercent() != 100 && serving.get(0).getPercent() != 0)) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("traffic: this server routes all of a function's calls to"
                            + " one version; give one target with percent 100")
                    .asRuntimeException();
        }
        ExternalFunctionTrafficTarget t = serving.get(0);
        if (t.hasLatestVersion()) {
            return deployments
                    .store()
                    .version(f.id(), deployments.store().highestVersion(f.id()))
                    .orElseThrow();
        }
        VersionRecord v = deployments.version(f.environment(), t.getExternalFunctionVersionId(), false);
        if (!v.functionId().equals(f.id())) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(
                            "traffic: version " + v.id() + " belongs to another" + " function, not " + f.name())
                    .asRuntimeException();
        }
        return v;
    }

    private static CreateExternalFunctionVersionRequest versionRequest(String name, ExternalFunctionVersionSpec s) {
        CreateExternalFunctionVersionRequest.Builder b = CreateExternalFunctionVersionRequest.newBuilder()
                .setFunctionName(name)
                .setInputArrowSchema(s.getInputArrowSchema())
                .setOutputArrowSchema(s.getOutputArrowSchema())
                .setSpec(s.getSpec())
                .addAllVolumeCommits(s.getVolumeCommitsList());
        if (s.hasConfig()) {
            b.setConfig(s.getConfig());
        }
        return b.build();
    }

    @Override
    public void getExternalFunction(
            GetExternalFunctionRequest request, StreamObserver<GetExternalFunctionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            FunctionRecord f = deployments.function(
                    environment(),
                    request.hasFunctionId() ? request.getFunctionId() : "",
                    request.hasFunctionName() ? request.getFunctionName() : "",
                    request.getIncludeDeleted());
            GetExternalFunctionResponse.Builder b =
                    GetExternalFunctionResponse.newBuilder().setExternalFunction(views.function(f));
            if (request.getIncludeScalingGroup() && f.deletedAt().isEmpty()) {
                b.setScalingGroup(deployments.groups().response(deployments.group(f)));
            }
            return b.build();
        });
    }

    @Override
    public void listExternalFunctions(
            ListExternalFunctionsRequest request, StreamObserver<ListExternalFunctionsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long after = Pages.cursor(request.hasCursor(), request.getCursor());
            List<FunctionRecord> page = deployments
                    .store()
                    .listFunctions(environment(), after, limit + 1, request.getIncludeDeleted(), request.getSearch());
            ListExternalFunctionsResponse.Builder b = ListExternalFunctionsResponse.newBuilder();
            page.stream().limit(limit).forEach(f -> b.addFunctions(views.summary(f, request.getIncludeScalingGroup())));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void deleteExternalFunction(
            DeleteExternalFunctionRequest request, StreamObserver<DeleteExternalFunctionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            deployments.delete(deployments.function(
                    environment(),
                    request.hasFunctionId() ? request.getFunctionId() : "",
                    request.hasFunctionName() ? request.getFunctionName() : "",
                    false));
            return DeleteExternalFunctionResponse.getDefaultInstance();
        });
    }

    @Override
    public void listExternalFunctionScheduledRuns(
            ListExternalFunctionScheduledRunsRequest request,
            StreamObserver<ListExternalFunctionScheduledRunsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            deployments.function(
                    environment(),
                    request.hasFunctionId() ? request.getFunctionId() : "",
                    request.hasFunctionName() ? request.getFunctionName() : "",
                    false);
            return ListExternalFunctionScheduledRunsResponse.getDefaultInstance(); // no schedules on this server
        });
    }

    @Override
    public void getExternalFunctionVersion(
            GetExternalFunctionVersionRequest request, StreamObserver<GetExternalFunctionVersionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            VersionRecord v = versionOf(
                    request.hasKey() ? Optional.of(request.getKey()) : Optional.empty(),
                    request.getId(),
                    request.getIncludeDeleted());
            GetExternalFunctionVersionResponse.Builder b =
                    GetExternalFunctionVersionResponse.newBuilder().setExternalFunctionVersion(views.version(v));
            if (request.getIncludeScalingGroup()) {
                FunctionRecord f = deployments.store().function(v.functionId()).orElseThrow();
                deployments
                        .groups()
                        .store()
                        .liveGroupNamed(f.environment(), f.name())
                        .ifPresent(g -> b.setScalingGroup(deployments.groups().response(g)));
            }
            return b.build();
        });
    }

    private VersionRecord versionOf(Optional<ExternalFunctionVersionKey> key, String id, boolean includeDeleted) {
        if (key.isPresent()) {
            return deployments.version(environment(), key.get(), includeDeleted);
        }
        if (id.isEmpty()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("give the version's id or key")
                    .asRuntimeException();
        }
        return deployments.version(environment(), id, includeDeleted);
    }

    @Override
    public void getExternalFunctionVersionSource(
            GetExternalFunctionVersionSourceRequest request,
            StreamObserver<GetExternalFunctionVersionSourceResponse> observer) {
        StatusErrors.unary(observer, () -> {
            VersionRecord v = deployments.version(environment(), request.getFunctionVersionId(), false);
            FunctionOptions o = FunctionOptions.of(FunctionWorkers.request(v).getConfig());
            CodeManifest manifest;
            try {
                manifest = code.manifest(o.code());
            } catch (IOException e) {
                throw Status.FAILED_PRECONDITION
                        .withDescription("the code manifest " + o.code() + " of version " + v.version()
                                + " cannot be read: " + e.getMessage())
                        .asRuntimeException();
            }
            GetExternalFunctionVersionSourceResponse.Builder b = GetExternalFunctionVersionSourceResponse.newBuilder()
                    .setVolumeName("blobs")
                    .setVolumeVersionId(v.version())
                    .setPrimaryPath(o.functions().get(0).target());
            manifest.entries()
                    .forEach(e -> b.addSourceFiles(ExternalFunctionVersionSourceFile.newBuilder()
                            .setPath(e.name())
                            .setSize(Math.max(0, e.size()))));
            return b.build();
        });
    }

    @Override
    public void listExternalFunctionVersions(
            ListExternalFunctionVersionsRequest request,
            StreamObserver<ListExternalFunctionVersionsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long after = Pages.cursor(request.hasCursor(), request.getCursor());
            Optional<String> fn = request.hasFunctionId() || request.hasFunctionName()
                    ? Optional.of(deployments
                            .function(
                                    environment(),
                                    request.hasFunctionId() ? request.getFunctionId() : "",
                                    request.hasFunctionName() ? request.getFunctionName() : "",
                                    request.getIncludeDeleted())
                            .id())
                    : Optional.empty();
            List<VersionRecord> page = deployments
                    .store()
                    .listVersions(
                            environment(), fn, request.getIdsList(), after, limit + 1, request.getIncludeDeleted());
            ListExternalFunctionVersionsResponse.Builder b = ListExternalFunctionVersionsResponse.newBuilder();
            page.stream()
                    .limit(limit)
                    .forEach(v -> b.addEntries(ListExternalFunctionVersionsEntry.newBuilder()
                            .setExternalFunctionVersion(views.version(v))));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void deleteExternalFunctionVersion(
            DeleteExternalFunctionVersionRequest request,
            StreamObserver<DeleteExternalFunctionVersionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            deployments.delete(versionOf(
                    request.hasKey() ? Optional.of(request.getKey()) : Optional.empty(), request.getId(), false));
            return DeleteExternalFunctionVersionResponse.getDefaultInstance();
        });
    }

    @Override
    public void callExternalFunction(
            CallExternalFunctionRequest request, StreamObserver<CallExternalFunctionResponse> observer) {
        CallExternalFunctionResponse response;
        try {
            VersionRecord v = deployments.version(environment(), request.getFunction(), false);
            response = switch (request.getBodyCase()) {
                case REMOTE_CALL_REQUEST -> {
                    // answered from the worker's answer as it arrives: no thread waits for it
                    calls.callAsync(v, request.getRemoteCallRequest(), new ReplicaPool.Outcome() {
                        @Override
                        public void answered(CallFunctionResponse answer) {
                            observer.onNext(CallExternalFunctionResponse.newBuilder()
                                    .setRemoteCallResponse(answer)
                                    .build());
                            observer.onCompleted();
                        }

                        @Override
                        public void failed(StatusRuntimeException status) {
                            observer.onError(status); // keeps the worker's trailers and chalk-call-id
                        }
                    });
                    yield null;
                }
                case ENQUEUE_REMOTE_CALL_REQUEST -> {
                    var e = request.getEnqueueRemoteCallRequest();
                    if (!e.getArgs().hasFeatherBytes()) {
                        throw Status.INVALID_ARGUMENT
                                .withDescription("enqueue_remote_call_request.args: give"
                                        + " feather_bytes; storage objects are not served here")
                                .asRuntimeException();
                    }
                    String function = deployments
                            .store()
                            .function(v.functionId())
                            .orElseThrow()
                            .name();
                    yield CallExternalFunctionResponse.newBuilder()
                            .setEnqueueRemoteCallResponse(EnqueueRemoteCallResponse.newBuilder()
                                    .setCallId(calls.enqueue(
                                            v,
                                            function,
                                            e.getName(),
                                            e.getArgs().getFeatherBytes())))
                            .build();
                }
                case BODY_NOT_SET ->
                    throw Status.INVALID_ARGUMENT
                            .withDescription("give remote_call_request or" + " enqueue_remote_call_request")
                            .asRuntimeException();
            };
        } catch (StatusRuntimeException e) {
            observer.onError(e); // keeps the worker's trailers and chalk-call-id
            return;
        } catch (RuntimeException e) {
            observer.onError(StatusErrors.toStatus(e).asRuntimeException());
            return;
        }
        if (response != null) {
            observer.onNext(response);
            observer.onCompleted();
        }
    }

    private static String environment() {
        return Caller.current().environment();
    }
}
