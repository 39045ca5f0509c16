/**
 * Micrometer observations of Chalk Compute: a span per sandbox lifecycle step and per gRPC call,
 * and the embedded server's spans joining the caller's trace through the gRPC metadata.
 */
@NullMarked
package ai.chalk.compute.autoconfigure.tracing;

import org.jspecify.annotations.NullMarked;
