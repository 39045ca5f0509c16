/**
 * Cross-cutting pieces of the gRPC layer: turning exceptions into statuses a client can act on,
 * and sending to a stream only as fast as the client reads.
 */
package ai.chalk.compute.server.grpc;
