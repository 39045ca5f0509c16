package ai.chalk.compute.sandbox;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.error.ResourceKind;
import ai.chalk.compute.error.ServerCall;
import ai.chalk.compute.proto.sandbox.v2.CreateSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.DeleteSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.GetSandboxSnapshotRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsFilters;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsRequest;
import ai.chalk.compute.proto.sandbox.v2.ListSandboxSnapshotsResponse;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshotServiceGrpc;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.LoggerFactory;

/**
 * The sandbox snapshots of a server: find, list and delete them. Get it from {@link SandboxClient#snapshots()};
 * take snapshots with {@link Sandbox#snapshot()}.
 *
 * <pre>{@code
 * for (Snapshot s : client.snapshots().list()) {
 *     System.out.println(s.id() + " of " + s.sandboxId() + ": " + s.status());
 * }
 * }</pre>
 */
public final class Snapshots {

    /** How often {@link #create} asks whether a snapshot still being copied has completed. */
    private static final Duration POLL = Duration.ofMillis(200);

    private final SandboxClient client;
    private final SandboxSnapshotServiceGrpc.SandboxSnapshotServiceBlockingStub stub;

    Snapshots(SandboxClient client) {
        this.client = client;
        this.stub = SandboxSnapshotServiceGrpc.newBlockingStub(client.channel());
    }

    /**
     * The snapshot with this id.
     *
     * @param id the snapshot's id
     * @return the snapshot as it is now
     * @throws ai.chalk.compute.error.SnapshotNotFoundException when the server does not know it
     */
    public Snapshot get(String id) {
        Objects.requireNonNull(id, "id");
        return Snapshot.of(
                client,
                ServerCall.run(
                                ResourceKind.SNAPSHOT,
                                () -> stub.getSandboxSnapshot(GetSandboxSnapshotRequest.newBuilder()
                                        .setSnapshotId(id)
                                        .build()))
                        .getSnapshot());
    }

    /**
     * Every snapshot of the client's environment, newest first, fetching all pages.
     *
     * @return the snapshots
     */
    public List<Snapshot> list() {
        return list(ListSandboxSnapshotsFilters.getDefaultInstance());
    }

    /**
     * The snapshots taken of one sandbox, newest first.
     *
     * @param sandboxId the sandbox's id
     * @return its snapshots
     */
    public List<Snapshot> listOf(String sandboxId) {
        return list(ListSandboxSnapshotsFilters.newBuilder()
                .addSandboxIds(Objects.requireNonNull(sandboxId, "sandboxId"))
                .build());
    }

    private List<Snapshot> list(ListSandboxSnapshotsFilters filters) {
        List<Snapshot> all = new ArrayList<>();
        String cursor = null;
        while (true) {
            ListSandboxSnapshotsRequest.Builder request =
                    ListSandboxSnapshotsRequest.newBuilder().setFilters(filters);
            if (cursor != null) {
                request.setCursor(cursor);
            }
            ListSandboxSnapshotsResponse page =
                    ServerCall.run(ResourceKind.SNAPSHOT, () -> stub.listSandboxSnapshots(request.build()));
            page.getSnapshotsList().forEach(s -> all.add(Snapshot.of(client, s)));
            if (!page.hasNextCursor()
                    || page.getNextCursor().isEmpty()
                    || page.getNextCursor().equals(cursor)) {
                return all;
            }
            cursor = page.getNextCursor();
        }
    }

    /**
     * Deletes a snapshot and its files.
     *
     * @param id the snapshot's id
     * @throws ai.chalk.compute.error.SnapshotNotFoundException when the server does not know it
     */
    public void delete(String id) {
        Objects.requireNonNull(id, "id");
        ServerCall.run(
                ResourceKind.SNAPSHOT,
                () -> stub.deleteSandboxSnapshot(DeleteSandboxSnapshotRequest.newBuilder()
                        .setSnapshotId(id)
                        .build()));
        LoggerFactory.getLogger(SandboxClient.class).info("Snapshot {} deleted", id);
    }

    /** Takes a snapshot of a sandbox and waits until its copy completes. */
    Snapshot create(String sandboxId, Duration timeout) {
        Snapshot snapshot = Snapshot.of(
                client,
                ServerCall.run(
                                ResourceKind.SANDBOX,
                                () -> stub.createSandboxSnapshot(CreateSandboxSnapshotRequest.newBuilder()
                                        .setSandboxId(sandboxId)
                                        .build()))
                        .getSnapshot());
        long deadline = System.nanoTime() + timeout.toNanos();
        while (snapshot.status() == Snapshot.Status.PENDING || snapshot.status() == Snapshot.Status.IN_PROGRESS) {
            if (System.nanoTime() - deadline > 0) {
                throw new FailedPreconditionException("snapshot " + snapshot.id() + " of sandbox " + sandboxId
                        + " is still " + snapshot.status() + " after " + timeout
                        + "; it completes in the background: client.snapshots().get(\"" + snapshot.id()
                        + "\") shows when");
            }
            try {
                Thread.sleep(POLL.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for snapshot " + snapshot.id(), e);
            }
            snapshot = get(snapshot.id());
        }
        if (snapshot.status() == Snapshot.Status.FAILED) {
            throw new FailedPreconditionException("snapshot " + snapshot.id() + " of sandbox " + sandboxId + " failed: "
                    + snapshot.statusMessage().orElse("the server gave no reason"));
        }
        LoggerFactory.getLogger(SandboxClient.class)
                .info("Snapshot {} of sandbox {} completed", snapshot.id(), sandboxId);
        return snapshot;
    }
}
