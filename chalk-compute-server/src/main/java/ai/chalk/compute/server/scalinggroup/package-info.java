/**
 * Scaling groups: named sets of replicas with immutable revisions, traffic routed to one revision (rollback), and
 * {@code chalk.scalinggroup.v1.ScalingGroupManagerService}.
 */
@NullMarked
package ai.chalk.compute.server.scalinggroup;

import org.jspecify.annotations.NullMarked;
