package ai.chalk.compute.server.volume;

import java.util.List;

/**
 * Who uses a volume right now: a volume that running sandboxes mount is not deleted under them. The sandbox
 * manager answers; the volume service asks, without knowing about sandboxes.
 */
@FunctionalInterface
public interface VolumeUsers {

    /** Ids of the running sandboxes that mount the environment's volume {@code name}, sorted. */
    List<String> sandboxesMounting(String environment, String name);
}
