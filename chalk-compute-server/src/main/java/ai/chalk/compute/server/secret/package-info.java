/**
 * Secrets and integrations of each environment, encrypted at rest with the server's key, and their resolution into the
 * environment variables of a sandbox or replica as it starts: values live only in the store (encrypted) and in memory.
 * The secrets the SDK saves for local values go once no workload that exists references them.
 */
@NullMarked
package ai.chalk.compute.server.secret;

import org.jspecify.annotations.NullMarked;
