package ai.chalk.compute.code;

import ai.chalk.compute.sandbox.Snapshot;

/**
 * A snapshot made by {@link CodeSandbox#createSnapshot(String)}: the sandbox's files. Start a sandbox from it with
 * {@link SandboxConfig.Builder#snapshot(String)} and {@link #id()}. The interpreter's memory is not in it: variables
 * must be defined again (or kept in files).
 *
 * @param name     the name it was made with (kept by this handle; Chalk's snapshots are known by id)
 * @param snapshot the snapshot on the server
 */
public record CodeSnapshot(String name, Snapshot snapshot) {

    /** The snapshot's id on the server. */
    public String id() {
        return snapshot.id();
    }
}
