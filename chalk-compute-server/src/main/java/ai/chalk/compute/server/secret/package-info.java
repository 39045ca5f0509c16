/**
 * Secrets and integrations of each environment, encrypted at rest with the server's key, and their resolution into the
 * environment variables of a sandbox or replica as it starts: values live only in the store (encrypted) and in memory.
 */
@NullMarked
package ai.chalk.compute.server.secret;

import org.jspecify.annotations.NullMarked;
