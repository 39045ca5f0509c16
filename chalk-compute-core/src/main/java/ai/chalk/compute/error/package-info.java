/**
 * The exceptions every Chalk Compute client throws, under one root {@link ai.chalk.compute.error.ChalkComputeException}.
 * Each carries the gRPC status code and the server's own message; one subclass per failure a caller can act on.
 */
@NullMarked
package ai.chalk.compute.error;

import org.jspecify.annotations.NullMarked;
