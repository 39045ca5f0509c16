/**
 * What a sandbox, scaling group or function may reach on the network ({@link ai.chalk.compute.network.NetworkPolicy}),
 * and credentials only the hosts they are for receive ({@link ai.chalk.compute.network.Credential}): the workload's
 * only way out is the server's egress proxy, which enforces both.
 */
@NullMarked
package ai.chalk.compute.network;

import org.jspecify.annotations.NullMarked;
