/**
 * Calls the server makes to HTTP endpoints others name (a model provider, a tenant's embeddings endpoint), read within
 * bounds of size and time. Nothing of the server's: any layer may use it.
 */
@NullMarked
package ai.chalk.compute.server.outbound;

import org.jspecify.annotations.NullMarked;
