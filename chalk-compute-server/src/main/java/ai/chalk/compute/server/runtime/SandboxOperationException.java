package ai.chalk.compute.server.runtime;

/**
 * A runtime cannot do what was asked of a running sandbox (suspend, resume, snapshot) here or now: the
 * engine lacks the mechanism (no cgroup freezer, say) or the sandbox is stopping. The message names the
 * reason and is shown to the user as it is; services report it as FAILED_PRECONDITION.
 */
public class SandboxOperationException extends Exception {
    public SandboxOperationException(String message) {
        super(message);
    }

    public SandboxOperationException(String message, Throwable cause) {
        super(message, cause);
    }
}
