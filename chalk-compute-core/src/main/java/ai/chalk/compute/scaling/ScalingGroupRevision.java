package ai.chalk.compute.scaling;

import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupRevisionResponse;
import java.time.Instant;
import java.util.Objects;

/**
 * One immutable revision of a scaling group.
 *
 * @param id        the revision's id
 * @param status    its state
 * @param message   the server's explanation; empty when none
 * @param createdAt when it was created
 * @param current   whether it is the revision serving now
 */
public record ScalingGroupRevision(String id, String status, String message, Instant createdAt, boolean current) {

    /** Checks for nulls. */
    public ScalingGroupRevision {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(message, "message");
        Objects.requireNonNull(createdAt, "createdAt");
    }

    /**
     * The revision a server described.
     *
     * @param revision          the server's message
     * @param currentRevisionId the group's current revision
     * @return the revision
     */
    public static ScalingGroupRevision of(ScalingGroupRevisionResponse revision, String currentRevisionId) {
        return new ScalingGroupRevision(
                revision.getId(),
                revision.getStatus(),
                revision.getStatusMessage(),
                Instant.ofEpochSecond(
                        revision.getCreatedAt().getSeconds(),
                        revision.getCreatedAt().getNanos()),
                revision.getId().equals(currentRevisionId));
    }
}
