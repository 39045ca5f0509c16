package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.proto.sandbox.v2.CreateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxResponse;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxResponse;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxesRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxesResponse;
import ai.chalk.compute.proto.sandbox.v2.ResumeSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.ResumeSandboxResponse;
import ai.chalk.compute.proto.sandbox.v2.SandboxServiceGrpc;
import ai.chalk.compute.proto.sandbox.v2.SandboxSortOrder;
import ai.chalk.compute.proto.sandbox.v2.SandboxStatus;
import ai.chalk.compute.proto.sandbox.v2.SuspendSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.SuspendSandboxResponse;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxRequest;
import ai.chalk.compute.proto.sandbox.v2.TerminateSandboxResponse;
import ai.chalk.compute.server.grpc.Pages;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.SandboxRecord;
import ai.chalk.compute.server.store.SandboxState;
import ai.chalk.compute.server.store.SandboxStore;
import com.google.protobuf.util.Durations;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code chalk.sandbox.v2.SandboxService}: create (from a ChalkContainerSpec or a snapshot), get, list, suspend,
 * resume and terminate, over the same sandboxes as v1 and, as there, in the caller's environment. Processes run
 * through v2's SandboxProcessService (or v1 Exec).
 */
public final class SandboxServiceV2 extends SandboxServiceGrpc.SandboxServiceImplBase {

    private final SandboxManager sandboxes;
    private final SnapshotRestorer snapshots;

    public SandboxServiceV2(SandboxManager sandboxes, SnapshotRestorer snapshots) {
        this.sandboxes = sandboxes;
        this.snapshots = snapshots;
    }

    @Override
    public void createSandbox(CreateSandboxRequest request, StreamObserver<CreateSandboxResponse> observer) {
        StatusErrors.unary(observer, () -> {
            SandboxRecord created = switch (request.getSourceCase()) {
                case SPEC -> sandboxes.create(environment(), request.getSpec(), Optional.empty());
                case SNAPSHOT_ID -> {
                    if (request.getSnapshotId().isBlank()) {
                        throw Status.INVALID_ARGUMENT
                                .withDescription("snapshot_id is empty: give the id of a"
                                        + " snapshot (ListSandboxSnapshots), or a spec")
                                .asRuntimeException();
                    }
                    yield snapshots.createSandbox(environment(), request.getSnapshotId());
                }
                case SOURCE_NOT_SET ->
                    throw Status.INVALID_ARGUMENT
                            .withDescription(
                                    "give either spec (a"
                                            + " ChalkContainerSpec; an empty one gives the server's default sandbox) or snapshot_id")
                            .asRuntimeException();
            };
            return CreateSandboxResponse.newBuilder()
                    .setSandbox(SandboxInfos.v2(created))
                    .build();
        });
    }

    /** Any sandbox this server knows, finished ones included (v2 has no include_terminated). */
    @Override
    public void getSandbox(GetSandboxRequest request, StreamObserver<GetSandboxResponse> observer) {
        StatusErrors.unary(
                observer,
                () -> GetSandboxResponse.newBuilder()
                        .setSandbox(SandboxInfos.v2(sandboxes.get(environment(), requireId(request.getId()))))
                        .build());
    }

    /**
     * Sandboxes by creation time, newest first unless {@code sort_order} is ASC; every status unless
     * {@code filters.statuses} narrows it; {@code search} matches ids and names, ignoring case.
     */
    @Override
    public void listSandboxes(ListSandboxesRequest request, StreamObserver<ListSandboxesResponse> observer) {
        StatusErrors.unary(observer, () -> {
            int limit = Pages.limit(request.hasLimit(), request.getLimit());
            long cursor = Pages.cursor(request.hasCursor(), request.getCursor());
            Set<SandboxState> states = new LinkedHashSet<>();
            boolean unmatchable = false;
            for (SandboxStatus status : request.getFilters().getStatusesList()) {
                if (status == SandboxStatus.SANDBOX_STATUS_UNSPECIFIED || status == SandboxStatus.UNRECOGNIZED) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription(
                                    "filters.statuses has " + status + "; give statuses such as SANDBOX_STATUS_RUNNING")
                            .asRuntimeException();
                }
                List<SandboxState> matching = SandboxInfos.states(status);
                states.addAll(matching);
            }
            if (!request.getFilters().getStatusesList().isEmpty() && states.isEmpty()) {
                unmatchable = true; // only statuses this server never reports
            }
            boolean descending = request.getSortOrder() != SandboxSortOrder.SANDBOX_SORT_ORDER_ASC;
            ListSandboxesResponse.Builder b = ListSandboxesResponse.newBuilder();
            if (unmatchable) {
                return b.build();
            }
            List<SandboxRecord> page = sandboxes.search(new SandboxStore.Query(
                    environment(),
                    states,
                    request.getFilters().getNamesList(),
                    request.getFilters().getImagesList(),
                    request.getSearch().trim(),
                    descending,
                    cursor,
                    limit + 1));
            page.stream().limit(limit).forEach(r -> b.addSandboxes(SandboxInfos.v2(r)));
            if (page.size() > limit) {
                b.setNextCursor(Long.toString(page.get(limit - 1).seq()));
            }
            return b.build();
        });
    }

    @Override
    public void suspendSandbox(SuspendSandboxRequest request, StreamObserver<SuspendSandboxResponse> observer) {
        StatusErrors.unary(observer, () -> {
            sandboxes.suspend(environment(), requireId(request.getId()));
            return SuspendSandboxResponse.getDefaultInstance();
        });
    }

    @Override
    public void resumeSandbox(ResumeSandboxRequest request, StreamObserver<ResumeSandboxResponse> observer) {
        StatusErrors.unary(observer, () -> {
            sandboxes.resume(environment(), requireId(request.getId()));
            return ResumeSandboxResponse.getDefaultInstance();
        });
    }

    @Override
    public void terminateSandbox(TerminateSandboxRequest request, StreamObserver<TerminateSandboxResponse> observer) {
        StatusErrors.unary(observer, () -> {
            Duration grace = SandboxServiceV1.DEFAULT_GRACE;
            if (request.hasGracePeriod()) {
                try {
                    grace = Duration.ofNanos(Durations.toNanos(Durations.checkValid(request.getGracePeriod())));
                } catch (IllegalArgumentException | ArithmeticException e) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("grace_period is not a valid duration: " + e.getMessage())
                            .asRuntimeException();
                }
                if (grace.isNegative()) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("grace_period must not be negative")
                            .asRuntimeException();
                }
                if (grace.compareTo(SandboxServiceV1.MAX_GRACE) > 0) {
                    throw Status.INVALID_ARGUMENT
                            .withDescription("grace_period is at most " + SandboxServiceV1.MAX_GRACE.toSeconds() + "s")
                            .asRuntimeException();
                }
            }
            sandboxes.terminate(environment(), requireId(request.getId()), grace, "requested by a client");
            return TerminateSandboxResponse.getDefaultInstance();
        });
    }

    private static String environment() {
        return SandboxServiceV1.environment();
    }

    private static String requireId(String id) {
        if (id.isBlank()) {
            throw Status.INVALID_ARGUMENT
                    .withDescription("id is required: the sandbox's id")
                    .asRuntimeException();
        }
        return id;
    }
}
