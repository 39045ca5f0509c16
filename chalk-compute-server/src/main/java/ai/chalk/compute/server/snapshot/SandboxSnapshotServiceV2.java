package ai.chalk.compute.server.snapshot;

import ai.chalk.compute.proto.sandbox.v2.CreateSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxSnapshotResponse;
import ai.chalk.compute.proto.sandbox.v2.DeleteSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.DeleteSandboxSnapshotResponse;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxSnapshotResponse;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsResponse;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshot;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotSortOrder;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotStatus;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.SnapshotStore;
import ai.chalk.compute.server.store.SnapshotStore.SnapshotRecord;
import com.google.protobuf.Timestamp;
import com.google.protobuf.util.Timestamps;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * {@code chalk.sandbox.v2.SandboxSnapshotService}: snapshots of a sandbox's filesystem; {@code CreateSandbox} with
 * {@code snapshot_id} (v2 SandboxService) starts sandboxes from them. Every call acts in the caller's environment
 * ({@link Caller}): another environment's snapshots and sandboxes answer NOT_FOUND and are never listed.
 */
public final class SandboxSnapshotServiceV2 extends SandboxSnapshotServiceGrpc.SandboxSnapshotServiceImplBase {

    private static final String STATUS_PREFIX = "SANDBOX_SNAPSHOT_STATUS_";

    private final SnapshotManager snapshots;

    public SandboxSnapshotServiceV2(SnapshotManager snapshots) {
        this.snapshots = snapshots;
    }

    /**
     * Takes a snapshot of a running or suspended sandbox. The answer normally comes with the snapshot COMPLETED
     * (or FAILED, saying why); a copy that takes long is answered IN_PROGRESS, to poll with GetSandboxSnapshot.
     */
    @Override
    public void createSandboxSnapshot(
            CreateSandboxSnapshotRequest request, StreamObserver<CreateSandboxSnapshotResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> CreateSandboxSnapshotResponse.newBuilder()
                        .setSnapshot(render(snapshots.create(environment(), request.getSandboxId())))
                        .build());
    }

    @Override
    public void getSandboxSnapshot(
            GetSandboxSnapshotRequest request, StreamObserver<GetSandboxSnapshotResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetSandboxSnapshotResponse.newBuilder()
                        .setSnapshot(render(snapshots.get(environment(), request.getSnapshotId())))
                        .build());
    }

    /**
     * Snapshots by creation time, newest first unless {@code sort_order} is ASC; {@code filters.statuses} takes
     * status names with or without the {@code SANDBOX_SNAPSHOT_STATUS_} prefix; {@code search} matches snapshot and
     * sandbox ids.
     */
    @Override
    public void listSandboxSnapshots(
            ListSandboxSnapshotsRequest request, StreamObserver<ListSandboxSnapshotsResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long cursor = Pages.cursor(request.hasCursor(), request.getCursor());
            List<SnapshotStore.Status> statuses = new ArrayList<>();
            for (String name : request.getFilters().getStatusesList()) {
                statuses.add(status(name));
            }
            boolean descending = request.getSortOrder() != SandboxSnapshotSortOrder.SANDBOX_SNAPSHOT_SORT_ORDER_ASC;
            List<SnapshotRecord> page = snapshots.list(new SnapshotStore.Query(
                    Optional.of(environment()),
                    request.getFilters().getSandboxIdsList(),
                    statuses,
                    request.getSearch().trim(),
                    descending,
                    cursor,
                    limit + 1));
            ListSandboxSnapshotsResponse.Builder b = ListSandboxSnapshotsResponse.newBuilder();
            page.stream().limit(limit).forEach(r -> b.addSnapshots(render(r)));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void deleteSandboxSnapshot(
            DeleteSandboxSnapshotRequest request, StreamObserver<DeleteSandboxSnapshotResponse> observer) {
        StatusErrors.unary(observer, () -> {
            snapshots.delete(environment(), request.getSnapshotId());
            return DeleteSandboxSnapshotResponse.getDefaultInstance();
        });
    }

    private static String environment() {
        return Caller.current().environment();
    }

    private static SnapshotStore.Status status(String name) {
        String n = name.trim().toUpperCase(Locale.ROOT);
        if (n.startsWith(STATUS_PREFIX)) {
            n = n.substring(STATUS_PREFIX.length());
        }
        try {
            return SnapshotStore.Status.valueOf(n);
        } catch (IllegalArgumentException e) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("filters.statuses has unknown status \"" + name + "\"; statuses are "
                            + Arrays.toString(SnapshotStore.Status.values()))
                    .asRuntimeException();
        }
    }

    static SandboxSnapshot render(SnapshotRecord r) {
        SandboxSnapshot.Builder b = SandboxSnapshot.newBuilder()
                .setId(r.id())
                .setSandboxId(r.sandboxId())
                .setSpec(SnapshotManager.spec(r))
                .setStatus(
                        switch (r.status()) {
                            case PENDING -> SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_PENDING;
                            case IN_PROGRESS -> SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_IN_PROGRESS;
                            case COMPLETED -> SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_COMPLETED;
                            case FAILED -> SandboxSnapshotStatus.SANDBOX_SNAPSHOT_STATUS_FAILED;
                        })
                .setCreatedAt(timestamp(r.createdAt()));
        r.statusMessage().ifPresent(b::setStatusMessage);
        r.completedAt().ifPresent(c -> b.setCompletedAt(timestamp(c)));
        return b.build();
    }

    private static Timestamp timestamp(Instant instant) {
        return Timestamps.fromNanos(instant.getEpochSecond() * 1_000_000_000L + instant.getNano());
    }
}
