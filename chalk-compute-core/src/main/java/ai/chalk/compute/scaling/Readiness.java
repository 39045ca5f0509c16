package ai.chalk.compute.scaling;

import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupResponse;
import java.util.Objects;

/**
 * What a scaling group reports about its replicas.
 *
 * @param revisionId        the current revision
 * @param status            the server's state, such as {@code READY} or {@code PENDING}
 * @param message           the server's explanation; empty when none
 * @param readyReplicas     replicas ready to serve
 * @param availableReplicas replicas available
 */
public record Readiness(String revisionId, String status, String message, int readyReplicas, int availableReplicas) {

    /** Checks for nulls. */
    public Readiness {
        Objects.requireNonNull(revisionId, "revisionId");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(message, "message");
    }

    /**
     * The readiness in a server's response.
     *
     * @param group the response
     * @return its readiness
     */
    public static Readiness of(ScalingGroupResponse group) {
        return new Readiness(
                group.getRevisionId(),
                group.getStatus(),
                group.getStatusMessage(),
                group.getReadyReplicas(),
                group.getAvailableReplicas());
    }

    /**
     * Whether this differs from an earlier readiness in what a person watching cares about: state, replica counts or
     * message (a new revision with the same state is no news until its state does).
     *
     * @param previous the earlier readiness, or {@code null} for none
     * @return {@code true} when it is worth reporting
     */
    public boolean differsFrom(Readiness previous) {
        return previous == null
                || !status.equals(previous.status)
                || !message.equals(previous.message)
                || readyReplicas != previous.readyReplicas
                || availableReplicas != previous.availableReplicas;
    }

    /** One line for a log: state, replica counts and message. */
    @Override
    public String toString() {
        return status + " (" + readyReplicas + " ready, " + availableReplicas + " available)"
                + (message.isEmpty() ? "" : ": " + message);
    }
}
