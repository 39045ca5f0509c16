/**
 * The {@code /actuator/chalkcompute} endpoint: the server in use and the sandboxes it runs, with
 * their state and status message.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.endpoint;

import org.jspecify.annotations.NullMarked;
