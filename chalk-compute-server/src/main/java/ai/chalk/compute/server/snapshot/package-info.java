/**
 * Sandbox snapshots: copies of a sandbox's filesystem under {@code <data-dir>/snapshots}, recorded in the store,
 * that new sandboxes start from; exposed by {@code chalk.sandbox.v2.SandboxSnapshotService}.
 */
@NullMarked
package ai.chalk.compute.server.snapshot;

import org.jspecify.annotations.NullMarked;
