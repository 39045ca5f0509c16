package ai.chalk.compute.server.scalinggroup;

import ai.chalk.compute.server.worker.PoolStatus;
import java.time.Instant;

/** The replicas of a group's serving revision, whatever they run. */
public interface RevisionRunner extends AutoCloseable {

    /** Their status now. */
    PoolStatus status();

    /** Periodic upkeep: replace dead replicas, stop idle ones. */
    void tick(Instant now);

    /** Stops every replica. */
    @Override
    void close();
}
