package ai.chalk.compute.server.scalinggroup;

import ai.chalk.compute.proto.scalinggroup.v1.BatchUpdateScalingGroupStatusRequest;
import ai.chalk.compute.proto.scalinggroup.v1.BatchUpdateScalingGroupStatusResponse;
import ai.chalk.compute.proto.scalinggroup.v1.CreateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.CreateScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.DeleteScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRevisionRequest;
import ai.chalk.compute.proto.scalinggroup.v1.GetScalingGroupRevisionResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupRevisionsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupRevisionsResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupsRequest;
import ai.chalk.compute.proto.scalinggroup.v1.ListScalingGroupsResponse;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupManagerServiceGrpc;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupTraffic;
import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupTrafficTarget;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupRequest;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupResponse;
import ai.chalk.compute.proto.scalinggroup.v1.UpdateScalingGroupStatusRequest;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.ScalingGroupStore.GroupRecord;
import ai.chalk.compute.server.store.ScalingGroupStore.RevisionRecord;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code chalk.scalinggroup.v1.ScalingGroupManagerService}: plain scaling groups (replicas = sandboxes running the
 * container spec), their revisions and traffic. Groups that serve a function are read here but changed through
 * the function catalog. Every call acts in the caller's environment ({@link Caller}): other environments' groups are
 * never listed and answer NOT_FOUND.
 */
public final class ScalingGroupManagerServiceV1
        extends ScalingGroupManagerServiceGrpc.ScalingGroupManagerServiceImplBase {

    private static final Set<String> STATUSES = Set.of("pending", "ready", "degraded", "failed");
    private final ScalingGroups groups;

    public ScalingGroupManagerServiceV1(ScalingGroups groups) {
        this.groups = groups;
    }

    @Override
    public void createScalingGroup(
            CreateScalingGroupRequest request, StreamObserver<CreateScalingGroupResponse> observer) {
        StatusErrors.unary(observer, () -> {
            String name = request.getSpec().getContainerSpec().getName().trim();
            if (name.isEmpty() || name.length() > 255) {
                throw Status.INVALID_ARGUMENT
                        .withDescription(
                                "spec.container_spec.name names the scaling group:" + " give 1 to 255 characters")
                        .asRuntimeException();
            }
            ScalingSpecs.check("spec", request.getSpec());
            GroupRecord g = groups.create(environment(), name, ScalingGroups.CONTAINER, request.getSpec());
            return CreateScalingGroupResponse.newBuilder()
                    .setScalingGroup(groups.response(g))
                    .build();
        });
    }

    @Override
    public void updateScalingGroup(
            UpdateScalingGroupRequest request, StreamObserver<UpdateScalingGroupResponse> observer) {
        StatusErrors.unary(observer, () -> {
            GroupRecord g = plain(
                    groups.require(environment(), Optional.of(request.getScalingGroupId()), Optional.empty(), false));
            if (!request.hasSpec() && !request.hasTraffic()) {
                throw Status.INVALID_ARGUMENT
                        .withDescription("give spec (a new revision) or traffic (the revision" + " to serve)")
                        .asRuntimeException();
            }
            if (request.hasSpec()) {
                ScalingSpecs.check("spec", request.getSpec());
                groups.addRevision(g, request.getSpec());
            } else {
                groups.route(g, target(g, request.getTraffic()));
            }
            return UpdateScalingGroupResponse.newBuilder()
                    .setScalingGroup(groups.response(g))
                    .build();
        });
    }

    private String target(GroupRecord g, ScalingGroupTraffic traffic) {
        List<ScalingGroupTrafficTarget> serving = traffic.getTargetsList().stream()
                .filter(t -> t.getPercent() > 0 || traffic.getTargetsCount() == 1)
                .toList();
        if (serving.size() != 1
                || (serving.get(0).getPercent() != 100 && serving.get(0).getPercent() != 0)) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("traffic: this server routes all of a group's traffic to"
                            + " one revision; give one target with percent 100")
                    .asRuntimeException();
        }
        ScalingGroupTrafficTarget t = serving.get(0);
        return t.hasLatestRevision() ? groups.store().latestRevision(g.id()).id() : t.getScalingGroupRevisionId();
    }

    @Override
    public void getScalingGroup(GetScalingGroupRequest request, StreamObserver<GetScalingGroupResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetScalingGroupResponse.newBuilder()
                        .setScalingGroup(groups.response(find(
                                request.hasId() ? request.getId() : "",
                                request.hasName() ? request.getName() : "",
                                request.getIncludeDeleted())))
                        .build());
    }

    @Override
    public void listScalingGroups(
            ListScalingGroupsRequest request, StreamObserver<ListScalingGroupsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long after = Pages.cursor(request.hasCursor(), request.getCursor());
            List<GroupRecord> page =
                    groups.store().listGroups(environment(), after, limit + 1, request.getIncludeDeleted());
            ListScalingGroupsResponse.Builder b = ListScalingGroupsResponse.newBuilder();
            page.stream().limit(limit).forEach(g -> b.addScalingGroups(groups.response(g)));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void deleteScalingGroup(
            DeleteScalingGroupRequest request, StreamObserver<DeleteScalingGroupResponse> observer) {
        StatusErrors.unary(observer, () -> {
            GroupRecord g = plain(
                    find(request.hasId() ? request.getId() : "", request.hasName() ? request.getName() : "", false));
            groups.delete(g);
            return DeleteScalingGroupResponse.newBuilder()
                    .setScalingGroup(groups.response(g))
                    .build();
        });
    }

    @Override
    public void getScalingGroupRevision(
            GetScalingGroupRevisionRequest request, StreamObserver<GetScalingGroupRevisionResponse> observer) {
        StatusErrors.unary(observer, () -> {
            GroupRecord g =
                    find(request.getScalingGroupId(), request.getScalingGroupName(), request.getIncludeDeleted());
            RevisionRecord r = groups.store()
                    .revision(request.getRevisionId())
                    .filter(x -> x.groupId().equals(g.id()))
                    .orElseThrow(() -> Status.NOT_FOUND
                            .withDescription("scaling group " + g.name()
                                    + " has no revision \"" + request.getRevisionId()
                                    + "\"; ListScalingGroupRevisions lists them")
                            .asRuntimeException());
            return GetScalingGroupRevisionResponse.newBuilder()
                    .setRevision(groups.revisionResponse(g, r))
                    .build();
        });
    }

    @Override
    public void listScalingGroupRevisions(
            ListScalingGroupRevisionsRequest request, StreamObserver<ListScalingGroupRevisionsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            GroupRecord g =
                    find(request.getScalingGroupId(), request.getScalingGroupName(), request.getIncludeDeleted());
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long after = Pages.cursor(request.hasCursor(), request.getCursor());
            List<RevisionRecord> page = groups.store().listRevisions(g.id(), after, limit + 1);
            ListScalingGroupRevisionsResponse.Builder b = ListScalingGroupRevisionsResponse.newBuilder();
            page.stream().limit(limit).forEach(r -> b.addRevisions(groups.revisionResponse(g, r)));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void batchUpdateScalingGroupStatus(
            BatchUpdateScalingGroupStatusRequest request,
            StreamObserver<BatchUpdateScalingGroupStatusResponse> observer) {
        StatusErrors.unary(observer, () -> {
            for (UpdateScalingGroupStatusRequest u : request.getUpdatesList()) { // all checked before any applies
                groups.require(environment(), Optional.of(u.getScalingGroupId()), Optional.empty(), false);
                if (!STATUSES.contains(u.getStatus())) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("updates: status \"" + u.getStatus() + "\" of scaling group "
                                    + u.getScalingGroupId() + " is not one of " + STATUSES)
                            .asRuntimeException();
                }
            }
            for (UpdateScalingGroupStatusRequest u : request.getUpdatesList()) {
                GroupRecord g =
                        groups.require(environment(), Optional.of(u.getScalingGroupId()), Optional.empty(), false);
                if (u.getObservedRevisionId().isEmpty()
                        || u.getObservedRevisionId().equals(g.currentRevisionId())) {
                    groups.store()
                            .setStatus(
                                    g.id(),
                                    u.getStatus(),
                                    u.hasStatusMessage() ? Optional.of(u.getStatusMessage()) : Optional.empty());
                }
            }
            return BatchUpdateScalingGroupStatusResponse.getDefaultInstance();
        });
    }

    private GroupRecord find(String id, String name, boolean includeDeleted) {
        if (id.isEmpty() && name.isEmpty()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("give the scaling group's id or name")
                    .asRuntimeException();
        }
        return groups.require(
                environment(),
                id.isEmpty() ? Optional.empty() : Optional.of(id),
                name.isEmpty() ? Optional.empty() : Optional.of(name),
                includeDeleted);
    }

    private static String environment() {
        return Caller.current().environment();
    }

    private static GroupRecord plain(GroupRecord g) {
        if (!g.kind().equals(ScalingGroups.CONTAINER)) {
            throw Status.FAILED_PRECONDITION
                    .withDescription("scaling group " + g.name() + " serves function " + g.name()
                            + ": change it with UpdateExternalFunction / DeleteExternalFunction")
                    .asRuntimeException();
        }
        return g;
    }
}
