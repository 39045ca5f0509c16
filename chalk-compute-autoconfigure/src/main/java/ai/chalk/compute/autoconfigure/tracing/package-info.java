/**
 * Micrometer observations of Chalk Compute: a span per sandbox lifecycle step and per gRPC call,
 * and the embedded server's spans joining the caller's trace through the gRPC metadata.
 */
package ai.chalk.compute.autoconfigure.tracing;
