package ai.chalk.compute.server.scalinggroup;

import ai.chalk.compute.proto.scalinggroup.v1.ScalingGroupSpec;
import ai.chalk.compute.server.store.ScalingGroupStore;
import ai.chalk.compute.server.worker.PoolStatus;
import java.util.function.Consumer;

/** Starts the replicas of a revision for one kind of scaling group. */
@FunctionalInterface
public interface RunnerFactory {

    /**
     * Starts (in the background) the replicas of {@code revision}; {@code onStatus} hears of every change.
     */
    RevisionRunner start(
            ScalingGroupStore.GroupRecord group,
            ScalingGroupStore.RevisionRecord revision,
            ScalingGroupSpec spec,
            Consumer<PoolStatus> onStatus);
}
