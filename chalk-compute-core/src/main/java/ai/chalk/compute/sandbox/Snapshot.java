package ai.chalk.compute.sandbox;

import ai.chalk.compute.error.FailedPreconditionException;
import ai.chalk.compute.proto.sandbox.v2.SandboxSnapshot;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * A snapshot of a sandbox's files, taken with {@link Sandbox#snapshot()}, from which any number of new sandboxes
 * start: {@link #restore()}, or {@code client.create(Sandbox.builder().snapshot(id))}. It outlives the sandbox it was
 * taken of, until {@link #delete()}. Find snapshots with {@link SandboxClient#snapshots()}.
 *
 * <pre>{@code
 * Snapshot prepared = sandbox.snapshot();
 * try (Sandbox copy = prepared.restore()) {
 *     copy.exec("ls", "/workspace");
 * }
 * }</pre>
 *
 * <p>A snapshot holds what the server said when it was last asked; {@link #refresh()} asks again.
 */
public final class Snapshot {

    /** Where a snapshot is in its life: only a {@link #COMPLETED} one starts sandboxes. */
    public enum Status {
        /** Waiting for the server to copy the files. */
        PENDING,
        /** Being copied. */
        IN_PROGRESS,
        /** Ready: sandboxes can start from it. */
        COMPLETED,
        /** The copy failed; {@link #statusMessage()} says why. */
        FAILED
    }

    private final SandboxClient client;
    private final String id;
    private final String sandboxId;
    private final Status status;
    private final Optional<String> statusMessage;
    private final Instant createdAt;
    private final Optional<Instant> completedAt;

    private Snapshot(SandboxClient client, SandboxSnapshot proto) {
        this.client = client;
        this.id = proto.getId();
        this.sandboxId = proto.getSandboxId();
        this.status = switch (proto.getStatus()) {
            case SANDBOX_SNAPSHOT_STATUS_IN_PROGRESS -> Status.IN_PROGRESS;
            case SANDBOX_SNAPSHOT_STATUS_COMPLETED -> Status.COMPLETED;
            case SANDBOX_SNAPSHOT_STATUS_FAILED -> Status.FAILED;
            default -> Status.PENDING;
        };
        this.statusMessage =
                proto.hasStatusMessage() && !proto.getStatusMessage().isEmpty()
                        ? Optional.of(proto.getStatusMessage())
                        : Optional.empty();
        this.createdAt = proto.hasCreatedAt()
                ? Instant.ofEpochSecond(
                        proto.getCreatedAt().getSeconds(), proto.getCreatedAt().getNanos())
                : null;
        this.completedAt = proto.hasCompletedAt()
                ? Optional.of(Instant.ofEpochSecond(
                        proto.getCompletedAt().getSeconds(),
                        proto.getCompletedAt().getNanos()))
                : Optional.empty();
    }

    static Snapshot of(SandboxClient client, SandboxSnapshot proto) {
        return new Snapshot(Objects.requireNonNull(client, "client"), proto);
    }

    /** The snapshot's id, for {@link SandboxDefinition.Builder#snapshot(String)} and {@link Snapshots#get(String)}. */
    public String id() {
        return id;
    }

    /** The id of the sandbox it was taken of. */
    public String sandboxId() {
        return sandboxId;
    }

    /** Where it was in its life when last asked. */
    public Status status() {
        return status;
    }

    /** Why it is in its status (for example why it failed), if the server said. */
    public Optional<String> statusMessage() {
        return statusMessage;
    }

    /** When it was taken; {@code null} if the server did not say. */
    public Instant createdAt() {
        return createdAt;
    }

    /** When its copy completed, once it has. */
    public Optional<Instant> completedAt() {
        return completedAt;
    }

    /**
     * Asks the server for the snapshot's current status.
     *
     * @return the snapshot as it is now
     * @throws ai.chalk.compute.error.SnapshotNotFoundException when it has been deleted
     */
    public Snapshot refresh() {
        return client.snapshots().get(id);
    }

    /**
     * Starts a new sandbox from this snapshot, with its files and the settings of the sandbox it was taken of, and
     * waits until it runs. Closing the returned sandbox terminates it.
     *
     * @return the running sandbox
     * @throws FailedPreconditionException when the snapshot has not completed (or failed)
     */
    public Sandbox restore() {
        return client.create(Sandbox.builder().snapshot(id));
    }

    /**
     * Deletes the snapshot and its files. Sandboxes started from it keep running with their own copy.
     *
     * @throws ai.chalk.compute.error.SnapshotNotFoundException when it has been deleted already
     */
    public void delete() {
        client.snapshots().delete(id);
    }

    @Override
    public String toString() {
        return "Snapshot[id=" + id + ", sandbox=" + sandboxId + ", status=" + status
                + statusMessage.map(m -> ", message=" + m).orElse("") + "]";
    }
}
