package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.common.v1.LogEntry;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.BuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.CustomImageBuildSummary;
import ai.chalk.compute.proto.sandbox.v1.CustomImageSandboxUsage;
import ai.chalk.compute.proto.sandbox.v1.CustomImageServiceGrpc;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildLogsResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildUsageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildUsageResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildWorkflowRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageBuildWorkflowResponse;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageRequest;
import ai.chalk.compute.proto.sandbox.v1.GetOrBuildCustomImageResponse;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsRequest;
import ai.chalk.compute.proto.sandbox.v1.ListCustomImageBuildsResponse;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesRequest;
import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesResponse;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.ImageBuildStore;
import ai.chalk.compute.server.store.ImageBuildStore.BuildRecord;
import ai.chalk.compute.server.store.SandboxRecord;
import ai.chalk.compute.server.store.SandboxStore;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Timestamp;
import com.google.protobuf.util.Timestamps;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * {@code chalk.sandbox.v1.CustomImageService}: builds declarative images ({@code ImageSpec}) on this server's runtime
 * through the {@link BuildCache}, and reports builds, their logs and the sandboxes made from them. There is no image
 * registry here: images stay on the runtime that built them, so {@code target_registry} is refused. Builds are the
 * caller's environment's ({@link Caller}): another environment's builds are never listed, answer NOT_FOUND, and are
 * not cache hits.
 */
public final class CustomImageServiceV1 extends CustomImageServiceGrpc.CustomImageServiceImplBase {

    static final int DEFAULT_LOG_LIMIT = 1000;
    static final int MAX_LOG_LIMIT = 10_000;

    private final BuildCache cache;
    private final SandboxStore sandboxes;

    public CustomImageServiceV1(BuildCache cache, SandboxStore sandboxes) {
        this.cache = cache;
        this.sandboxes = sandboxes;
    }

    @Override
    public void buildCustomImage(BuildCustomImageRequest request, StreamObserver<BuildCustomImageResponse> observer) {
        StatusErrors.unary(observer, () -> {
            refuseRegistry(request.hasTargetRegistry() ? request.getTargetRegistry() : "");
            Optional<String> tag = request.hasTag() && !request.getTag().isBlank()
                    ? Optional.of(request.getTag().trim())
                    : Optional.empty();
            BuildAnswer answer = cache.build(environment(), spec(request.hasImageSpec(), request.getImageSpec()), tag);
            return BuildCustomImageResponse.newBuilder()
                    .setBuildId(answer.buildId())
                    .setImage(answer.imageRef())
                    .build();
        });
    }

    @Override
    public void getOrBuildCustomImage(
            GetOrBuildCustomImageRequest request, StreamObserver<GetOrBuildCustomImageResponse> observer) {
        StatusErrors.unary(observer, () -> {
            refuseRegistry(request.hasTargetRegistry() ? request.getTargetRegistry() : "");
            BuildAnswer answer = cache.getOrBuild(environment(), spec(request.hasImageSpec(), request.getImageSpec()));
            GetOrBuildCustomImageResponse.Builder b = GetOrBuildCustomImageResponse.newBuilder()
                    .setBuildId(answer.buildId())
                    .setStatus(answer.status())
                    .setImage(answer.imageRef());
            answer.error().ifPresent(b::setError);
            return b.build();
        });
    }

    @Override
    public void getCustomImage(GetCustomImageRequest request, StreamObserver<GetCustomImageResponse> observer) {
        StatusErrors.unary(observer, () -> {
            BuildAnswer answer = BuildAnswer.of(cache.find(environment(), request.getBuildId()));
            GetCustomImageResponse.Builder b = GetCustomImageResponse.newBuilder()
                    .setBuildId(answer.buildId())
                    .setStatus(answer.status())
                    .setImage(answer.imageRef());
            answer.error().ifPresent(b::setError);
            return b.build();
        });
    }

    @Override
    public void streamCustomImageBuildUpdates(
            StreamCustomImageBuildUpdatesRequest request,
            StreamObserver<StreamCustomImageBuildUpdatesResponse> observer) {
        try {
            cache.find(environment(), request.getBuildId()); // NOT_FOUND before anything is streamed
            cache.follow(new BuildFollower(
                    cache, request.getBuildId(), (ServerCallStreamObserver<StreamCustomImageBuildUpdatesResponse>)
                            observer));
        } catch (RuntimeException e) {
            observer.onError(StatusErrors.toStatus(e).asRuntimeException());
        }
    }

    @Override
    public void listCustomImageBuilds(
            ListCustomImageBuildsRequest request, StreamObserver<ListCustomImageBuildsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long before = Pages.cursor(request.hasCursor(), request.getCursor());
            List<BuildRecord> page = cache.store().list(environment(), before, limit + 1);
            ListCustomImageBuildsResponse.Builder b = ListCustomImageBuildsResponse.newBuilder();
            page.stream().limit(limit).forEach(r -> b.addBuilds(summary(r)));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void getCustomImageBuild(
            GetCustomImageBuildRequest request, StreamObserver<GetCustomImageBuildResponse> observer) {
        StatusErrors.unary(observer, () -> {
            BuildRecord record = switch (request.getIdentifierCase()) {
                case BUILD_ID -> cache.find(environment(), request.getBuildId());
                case CONTENT_HASH -> cache.findByHash(environment(), request.getContentHash());
                case IDENTIFIER_NOT_SET -> throw identifierMissing();
            };
            GetCustomImageBuildResponse.Builder b =
                    GetCustomImageBuildResponse.newBuilder().setBuild(summary(record));
            try {
                b.setImageSpec(ImageSpec.parseFrom(record.spec()));
            } catch (InvalidProtocolBufferException e) {
                throw new IllegalStateException("the stored spec of build " + record.id() + " is unreadable", e);
            }
            return b.build();
        });
    }

    @Override
    public void getCustomImageBuildLogs(
            GetCustomImageBuildLogsRequest request, StreamObserver<GetCustomImageBuildLogsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            BuildRecord record = byIdentifier(
                    request.getIdentifierCase() == GetCustomImageBuildLogsRequest.IdentifierCase.BUILD_ID,
                    request.getBuildId(),
                    request.getIdentifierCase() == GetCustomImageBuildLogsRequest.IdentifierCase.CONTENT_HASH,
                    request.getContentHash());
            int limit = request.getLimit();
            if (limit < 0 || limit > MAX_LOG_LIMIT) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("limit " + limit + " is out of range: give 1 to " + MAX_LOG_LIMIT
                                + ", or 0 for " + DEFAULT_LOG_LIMIT)
                        .asRuntimeException();
            }
            limit = limit == 0 ? DEFAULT_LOG_LIMIT : limit;
            long after = 0;
            if (request.hasPageToken() && !request.getPageToken().isEmpty()) {
                try {
                    after = Long.parseLong(request.getPageToken());
                } catch (NumberFormatException e) {
                    after = -1;
                }
                if (after < 0) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription(
                                    "page_token \"" + request.getPageToken()
                                            + "\" is not one this server returned: pass next_page_token from a previous response")
                            .asRuntimeException();
                }
            }
            Optional<Instant> from = request.hasStartTime()
                    ? Optional.of(instant("start_time", request.getStartTime()))
                    : Optional.empty();
            Optional<Instant> until =
                    request.hasEndTime() ? Optional.of(instant("end_time", request.getEndTime())) : Optional.empty();
            List<ImageBuildStore.LogLine> lines = cache.store().logs(record.id(), after, from, until, limit + 1);
            GetCustomImageBuildLogsResponse.Builder b = GetCustomImageBuildLogsResponse.newBuilder();
            for (ImageBuildStore.LogLine line : lines.subList(0, Math.min(limit, lines.size()))) {
                b.addLogs(LogEntry.newBuilder()
                        .setId(record.id() + ":" + line.seq())
                        .setSeverity(line.severity())
                        .setTimestamp(timestamp(line.at()))
                        .setMessage(line.text())
                        .putLabels("build_id", record.id())
                        .build());
            }
            if (lines.size() > limit) {
                b.setNextPageToken(Long.toString(lines.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    /** Argo workflows are how Chalk's cloud builds images; this server builds in-process, so a build has none. */
    @Override
    public void getCustomImageBuildWorkflow(
            GetCustomImageBuildWorkflowRequest request, StreamObserver<GetCustomImageBuildWorkflowResponse> observer) {
        StatusErrors.unary(observer, () -> {
            byIdentifier(
                    request.getIdentifierCase() == GetCustomImageBuildWorkflowRequest.IdentifierCase.BUILD_ID,
                    request.getBuildId(),
                    request.getIdentifierCase() == GetCustomImageBuildWorkflowRequest.IdentifierCase.CONTENT_HASH,
                    request.getContentHash());
            return GetCustomImageBuildWorkflowResponse.getDefaultInstance();
        });
    }

    /**
     * The sandboxes created from a build (by content hash: from any build of that spec). Containers and scaling
     * groups do not exist on this server, so those lists are empty.
     */
    @Override
    public void getCustomImageBuildUsage(
            GetCustomImageBuildUsageRequest request, StreamObserver<GetCustomImageBuildUsageResponse> observer) {
        StatusErrors.unary(observer, () -> {
            List<String> buildIds = switch (request.getIdentifierCase()) {
                case BUILD_ID ->
                    List.of(cache.find(environment(), request.getBuildId()).id());
                case CONTENT_HASH ->
                    cache.store()
                            .idsFor(
                                    environment(),
                                    cache.findByHash(environment(), request.getContentHash())
                                            .contentHash());
                case IDENTIFIER_NOT_SET -> throw identifierMissing();
            };
            GetCustomImageBuildUsageResponse.Builder b = GetCustomImageBuildUsageResponse.newBuilder();
            for (SandboxRecord s : sandboxes.fromBuilds(environment(), buildIds)) {
                b.addSandboxes(CustomImageSandboxUsage.newBuilder()
                        .setId(s.id())
                        .setName(s.name().orElse(""))
                        .setStatus(s.state().name()));
            }
            return b.build();
        });
    }

    private BuildRecord byIdentifier(boolean byBuildId, String buildId, boolean byHash, String contentHash) {
        if (byBuildId) {
            return cache.find(environment(), buildId);
        }
        if (byHash) {
            return cache.findByHash(environment(), contentHash);
        }
        throw identifierMissing();
    }

    private static String environment() {
        return Caller.current().environment();
    }

    private static RuntimeException identifierMissing() {
        return Status.INVALID_ARGUMENT
                .withDescription("give build_id or content_hash to say which build")
                .asRuntimeException();
    }

    private static ImageSpec spec(boolean present, ImageSpec spec) {
        if (!present) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("image_spec is required: the image to build")
                    .asRuntimeException();
        }
        return spec;
    }

    private static void refuseRegistry(String registry) {
        if (!registry.isBlank()) {
            throw Status.FAILED_PRECONDITION
                    .withDescription(
                            "target_registry \"" + registry + "\": this server has"
                                    + " no image registry to push to; leave target_registry unset: the image stays on this server's"
                                    + " runtime, where its sandboxes run (on the docker runtime, BuildCustomImage's tag names it)")
                    .asRuntimeException();
        }
    }

    private static CustomImageBuildSummary summary(BuildRecord r) {
        return CustomImageBuildSummary.newBuilder()
                .setContentHash(r.contentHash())
                .setImageRef(r.imageRef().orElse(""))
                .setCreatedAt(timestamp(r.createdAt()))
                .setBuildId(r.id())
                .setStatus(BuildAnswer.status(r.status()))
                .setBaseImage(r.baseImage())
                .build();
    }

    private static Instant instant(String field, Timestamp t) {
        try {
            Timestamps.checkValid(t);
        } catch (IllegalArgumentException e) {
            throw Status.INVALID_ARGUMENT
                    .withDescription(field + " is not a valid timestamp: " + e.getMessage())
                    .asRuntimeException();
        }
        return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
    }

    private static Timestamp timestamp(Instant instant) {
        return Timestamp.newBuilder()
                .setSeconds(instant.getEpochSecond())
                .setNanos(instant.getNano())
                .build();
    }
}
