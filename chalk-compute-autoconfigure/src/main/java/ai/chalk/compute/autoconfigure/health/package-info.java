/**
 * The {@code chalkCompute} actuator health indicator: whether the server answers, and for the
 * embedded server its runtime, the isolation in force and its sandboxes by state.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.health;

import org.jspecify.annotations.NullMarked;
