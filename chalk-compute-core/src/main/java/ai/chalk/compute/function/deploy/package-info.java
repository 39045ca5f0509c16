/** Deploying functions: code snapshots as content-addressed blobs, and the ensure request that deploys a version.
 *  Follows {@code docs/functions-protocol.md}: the same classes give the same code digest on every run. */
@NullMarked
package ai.chalk.compute.function.deploy;

import org.jspecify.annotations.NullMarked;
