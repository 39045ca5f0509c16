/**
 * The cgroups of local sandboxes behind one interface (runc's {@code cgroups.Manager}): limits, per-exec groups, the
 * freezer and kills, on cgroup v1 hierarchies or the v2 unified one, whichever this host drives its controllers with.
 */
@NullMarked
package ai.chalk.compute.server.runtime.local.cgroup;

import org.jspecify.annotations.NullMarked;
