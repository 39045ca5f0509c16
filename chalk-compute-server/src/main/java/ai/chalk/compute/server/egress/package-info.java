/**
 * The egress proxy of sandboxes with a network policy: which destinations a policy allows, and the HTTP proxy, TLS
 * inspection and resolver that enforce it on the only link such a sandbox has, with the per-server CA for the hosts
 * whose requests it rewrites. Secrets reach it resolved and never leave it but in requests to the hosts they are for.
 */
@NullMarked
package ai.chalk.compute.server.egress;

import org.jspecify.annotations.NullMarked;
