/**
 * The embedded local runtime: sandboxes as Linux namespaces (bubblewrap or util-linux) with cgroup limits, on the
 * host's read-only system view or an image's root. Daemonless; plain processes only where nothing isolates, said so.
 */
@NullMarked
package ai.chalk.compute.server.runtime.local;

import org.jspecify.annotations.NullMarked;
