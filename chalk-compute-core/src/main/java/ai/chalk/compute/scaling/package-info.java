/** Scaling groups: long-running replicated services with immutable revisions, deployed, listed and rolled back
 *  through {@link ai.chalk.compute.scaling.ScalingGroup}. */
@NullMarked
package ai.chalk.compute.scaling;

import org.jspecify.annotations.NullMarked;
