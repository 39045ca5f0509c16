/**
 * What the server's managers and runtimes throw when they refuse or cannot serve a request, in the server's own words;
 * the gRPC edge alone turns it into a status ({@code grpc.StatusErrors}).
 */
@NullMarked
package ai.chalk.compute.server.error;

import org.jspecify.annotations.NullMarked;
