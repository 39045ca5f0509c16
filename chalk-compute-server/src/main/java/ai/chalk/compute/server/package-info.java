/**
 * The Chalk Compute server: {@link ai.chalk.compute.server.ComputeServer} wires the store, a runtime
 * and the gRPC services, in-process or on a TCP port.
 */
@NullMarked
package ai.chalk.compute.server;

import org.jspecify.annotations.NullMarked;
