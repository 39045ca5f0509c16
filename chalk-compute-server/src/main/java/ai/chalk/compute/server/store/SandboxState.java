package ai.chalk.compute.server.store;

/** Lifecycle states of a sandbox, named as in Chalk's {@code chalk.sandbox.v2.SandboxStatus}. */
public enum SandboxState {
    PENDING,
    RUNNING,
    SUSPENDED,
    TERMINATED,
    FAILED;

    /** Whether the sandbox can no longer run processes. */
    public boolean finished() {
        return this == TERMINATED || this == FAILED;
    }
}
