/**
 * The gRPC edge: who may be listened to, malformed requests answered INVALID_ARGUMENT without flooding the log,
 * exceptions turned into statuses a client can act on, and streams sent only as fast as the client reads.
 */
@NullMarked
package ai.chalk.compute.server.grpc;

import org.jspecify.annotations.NullMarked;
