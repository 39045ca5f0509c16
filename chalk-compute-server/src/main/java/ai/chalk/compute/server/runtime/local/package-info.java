/**
 * The embedded local runtime: sandboxes as Linux namespaces (bubblewrap or util-linux) with cgroup limits.
 * Daemonless; falls back to plain processes only where the host has no isolation, and says so.
 */
package ai.chalk.compute.server.runtime.local;
