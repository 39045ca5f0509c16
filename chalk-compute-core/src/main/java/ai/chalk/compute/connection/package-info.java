/**
 * How a client reaches a Chalk Compute server: target address, TLS, trusted certificates and bearer token,
 * read from code or from the environment ({@code CHALK_COMPUTE_TARGET}, {@code CHALK_API_SERVER}).
 */
@NullMarked
package ai.chalk.compute.connection;

import org.jspecify.annotations.NullMarked;
