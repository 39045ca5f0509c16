package ai.chalk.compute.server.runtime;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

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
     * Idempotent; blocks until done. A suspended sandbox is resumed first, so that its processes
     * can receive the signals.
     */
    void terminate(Duration grace);

    /** Completes when the sandbox stops for any reason, with a sentence saying why. */
    CompletableFuture<String> onStopped();

    /**
     * Suspends every process of the sandbox (the init, every exec and whatever they started) where it
     * stands, keeping memory, open files and sockets; nothing in the sandbox runs until {@link #resume()}.
     * Processes started while it is suspended are suspended as they enter the sandbox. Signals sent
     * meanwhile take effect on resume, SIGKILL too on a cgroup v1 host (cgroup v2's freezer lets fatal signals
     * through at once). Suspending a suspended sandbox does nothing.
     *
     * @throws SandboxOperationException when the engine cannot suspend here (the local runtime needs the
     *                                   cgroup freezer) or the sandbox is stopping; the message says which
     */
    default void suspend() throws SandboxOperationException {
        throw new SandboxOperationException("this runtime cannot suspend sandboxes");
    }

    /**
     * Lets the processes of a suspended sandbox continue. Resuming a running sandbox does nothing.
     *
     * @throws SandboxOperationException as {@link #suspend()}
     */
    default void resume() throws SandboxOperationException {
        throw new SandboxOperationException("this runtime cannot suspend or resume sandboxes");
    }

    /**
     * Copies the sandbox's writable filesystem (everything it changed or created outside its volumes and
     * the system directories it sees read-only) to {@code destination}, a directory this call creates
     * and which must not exist yet. Modes, ownership, symlinks (never followed) and hard links are kept.
     * The copy is point-in-time consistent when {@link SnapshotResult#frozen()} says so: the sandbox's
     * processes are suspended while it is taken and continue afterwards (a suspended sandbox stays
     * suspended). On failure nothing is left at {@code destination}.
     *
     * <p>The copy seeds new sandboxes through {@link SandboxSpec#initialFilesystem()}.
     *
     * @throws SandboxOperationException when the engine cannot take snapshots or the sandbox is stopping
     * @throws IOException               when copying failed (disk full, ...); the message says what failed
     */
    default SnapshotResult snapshot(Path destination) throws SandboxOperationException, IOException {
        return snapshot(destination, () -> false);
    }

    /**
     * {@link #snapshot(Path)}, stopped when {@code stop} says so (it is asked every 100 ms or so of the copy, or every
     * few megabytes): the copy fails with an {@link IOException} and nothing is left at {@code destination}.
     */
    default SnapshotResult snapshot(Path destination, BooleanSupplier stop)
            throws SandboxOperationException, IOException {
        throw new SandboxOperationException("this runtime cannot snapshot sandboxes");
    }

    /**
     * How a snapshot was taken.
     *
     * @param frozen whether the sandbox's processes were suspended during the copy (a point-in-time copy)
     * @param note   a sentence worth telling the user about the copy, empty when there is nothing to say
     */
    record SnapshotResult(boolean frozen, String note) {}
}
