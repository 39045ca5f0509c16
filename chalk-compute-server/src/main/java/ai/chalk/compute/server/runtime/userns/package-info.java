/**
 * User namespaces for local sandboxes: each sandbox's processes run as ids of a range of their own (root inside is an
 * unprivileged id outside), and see their files through id-mapped mounts, so what is on disk keeps its plain owners.
 */
@NullMarked
package ai.chalk.compute.server.runtime.userns;

import org.jspecify.annotations.NullMarked;
