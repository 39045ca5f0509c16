/**
 * The server's HTTP port, beside its gRPC one: what plain HTTP clients fetch from it (the JWKS that verifies the
 * server's tokens, and the transfers that are too big for a gRPC message).
 */
@NullMarked
package ai.chalk.compute.server.http;

import org.jspecify.annotations.NullMarked;
