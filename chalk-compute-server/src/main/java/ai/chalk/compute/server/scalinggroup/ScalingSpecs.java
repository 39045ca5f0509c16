package ai.chalk.compute.server.scalinggroup;

import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.sandbox.ContainerSpecs;
import java.time.Duration;

/** Checks of a {@code ScalingGroupSpec}'s replica counts and what they mean here. */
public final class ScalingSpecs {

    /** The scale-down delay when the spec gives none. */
    public static final Duration DEFAULT_SHUTDOWN_DELAY = Duration.ofSeconds(60);
    /** The most replicas one revision may run on this server. */
    public static final int MAX_REPLICAS = 64;

    private ScalingSpecs() {}

    /** INVALID_ARGUMENT naming the field when the replica counts make no sense. */
    public static void check(String field, ScalingGroupSpec spec) {
        var s = spec.getScalingSpec();
        if (s.getMinReplicas() < 0 || s.getMaxReplicas() < 0) {
            throw invalid(field + ".scaling_spec: min_replicas and max_replicas must not be negative (got "
                    + s.getMinReplicas() + " and " + s.getMaxReplicas() + ")");
        }
        if (s.getMaxReplicas() > 0 && s.getMaxReplicas() < s.getMinReplicas()) {
            throw invalid(field + ".scaling_spec: max_replicas " + s.getMaxReplicas() + " is below min_replicas "
                    + s.getMinReplicas());
        }
        if (max(spec) > MAX_REPLICAS) {
            throw invalid(field + ".scaling_spec: at most " + MAX_REPLICAS + " replicas run on this server; asked "
                    + max(spec));
        }
        if (s.hasShutdownDelaySeconds() && s.getShutdownDelaySeconds() < 0) {
            throw invalid(field + ".scaling_spec.shutdown_delay_seconds must not be negative");
        }
        ContainerSpecs.checkSize(spec.getContainerSpec(), field + ".container_spec"); // each replica's sandbox's
    }

    /** The most replicas: {@code max_replicas}, or {@code max(min_replicas, 1)} when unset (0). */
    public static int max(ScalingGroupSpec spec) {
        var s = spec.getScalingSpec();
        return s.getMaxReplicas() > 0 ? s.getMaxReplicas() : Math.max(1, s.getMinReplicas());
    }

    /** How long a replica above the minimum may stay idle. */
    public static Duration shutdownDelay(ScalingGroupSpec spec) {
        var s = spec.getScalingSpec();
        return s.hasShutdownDelaySeconds() ? Duration.ofSeconds(s.getShutdownDelaySeconds()) : DEFAULT_SHUTDOWN_DELAY;
    }

    private static RuntimeException invalid(String message) {
        return ComputeException.invalid(message);
    }
}
