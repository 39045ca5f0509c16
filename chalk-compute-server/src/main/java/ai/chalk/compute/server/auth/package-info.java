/**
 * Who may do what: the caller of every call (its environment and identity), bearer tokens signed by the server's own
 * keys, client credentials exchanged for them, and the workload identity of deployed code.
 */
@NullMarked
package ai.chalk.compute.server.auth;

import org.jspecify.annotations.NullMarked;
