package ai.chalk.compute.server.runtime;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** One running sandbox on a runtime. */
public interface RuntimeSandbox {

    /** The sandbox id given in {@link SandboxSpec#id()}. */
    String id();

    /**
     * Starts a process inside the sandbox. The process runs with the sandbox's isolation, its
     * environment layered as sandbox env, then {@link ProcessSpec#env()}.
     *
     * @throws ProcessStartException when the process cannot be started (e.g. command not found);
     *                               the message is shown to the user
     */
    RuntimeProcess exec(ProcessSpec spec) throws ProcessStartException;

    /**
     * Stops every process in the sandbox: SIGTERM, then SIGKILL to whatever is left after
     * {@code grace}; then releases the sandbox's resources (writable layer, cgroups).
     * Idempotent; blocks until done.
     */
    void terminate(Duration grace);

    /** Completes when the sandbox stops for any reason, with a sentence saying why. */
    CompletableFuture<String> onStopped();
}
