/**
 * The caller's environment as Chalk's {@code TeamService} shows it: its name and id, and where its gRPC engine answers,
 * for the SDK's endpoint discovery.
 */
@NullMarked
package ai.chalk.compute.server.team;

import org.jspecify.annotations.NullMarked;
