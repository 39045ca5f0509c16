package ai.chalk.compute.server.worker;

import java.util.Optional;

/**
 * What a pool of replicas reports as its scaling group's status.
 *
 * @param status            {@code pending}, {@code ready}, {@code degraded} or {@code failed}
 * @param message           the last error, if any
 * @param readyReplicas     replicas serving
 * @param availableReplicas replicas serving with no call in flight
 */
public record PoolStatus(String status, Optional<String> message, int readyReplicas, int availableReplicas) {}
