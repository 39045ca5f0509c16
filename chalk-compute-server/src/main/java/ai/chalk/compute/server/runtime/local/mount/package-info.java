/**
 * A local sandbox's mounts as data: one ordered list of typed operations, built and checked once per sandbox, then
 * rendered for the tool that performs it (bubblewrap's options, or the lines the unshare init mounts from).
 */
@NullMarked
package ai.chalk.compute.server.runtime.local.mount;

import org.jspecify.annotations.NullMarked;
