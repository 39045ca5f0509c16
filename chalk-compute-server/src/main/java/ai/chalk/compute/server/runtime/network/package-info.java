/**
 * Egress for a sandbox's own network namespace: user-mode NAT (slirp4netns) to the outside world, with the host's
 * loopback, the host's own addresses and cloud metadata refused by firewall rules sandbox code cannot change.
 */
@NullMarked
package ai.chalk.compute.server.runtime.network;

import org.jspecify.annotations.NullMarked;
