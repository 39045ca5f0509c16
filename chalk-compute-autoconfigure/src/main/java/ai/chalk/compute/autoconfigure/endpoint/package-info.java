/**
 * The {@code /actuator/chalkcompute} endpoint: the server in use and the sandboxes it runs, with
 * their state and status message.
 */
package ai.chalk.compute.autoconfigure.endpoint;
