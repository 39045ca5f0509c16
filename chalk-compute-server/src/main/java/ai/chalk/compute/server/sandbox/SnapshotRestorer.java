package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.server.store.SandboxRecord;

/** Starts sandboxes from snapshots, for {@code CreateSandbox{snapshot_id}}; the snapshot package implements it. */
@FunctionalInterface
public interface SnapshotRestorer {

    /**
     * Creates a sandbox whose filesystem is the snapshot's, with the spec of the sandbox it was taken of.
     * The snapshot and the sandbox are the environment's: another environment's snapshot is NOT_FOUND, as an unknown
     * one; FAILED_PRECONDITION for one that is not COMPLETED.
     */
    SandboxRecord createSandbox(String environment, String snapshotId);
}
