package ai.chalk.compute.server.runtime;

import java.util.Collection;

/**
 * An execution engine for sandboxes: the local runtime (namespaces), Docker, Kubernetes.
 * Implementations are thread-safe; the server calls them from many request threads.
 */
public interface SandboxRuntime extends AutoCloseable {

    /** The runtime's name as users select it: {@code local}, {@code docker}; for messages and health. */
    String name();

    /** The isolation actually in force, for logs, health and the isolation tests. */
    Isolation isolation();

    /**
     * Whether a sandbox created without an image sees the host's system directories ({@code /usr}, {@code /lib}...)
     * read-only, as the local runtime's do: then the server's own Java runs in it without being bound in, and
     * function workers need no image. False by default (a container has its image's system, not the host's).
     */
    default boolean sandboxesSeeHostSystem() {
        return false;
    }

    /**
     * The most sandboxes this runtime runs at once (function replicas and pooled sandboxes included); a start past it
     * is refused.
     */
    int maxSandboxes();

    /**
     * Sandboxes this runtime started ahead of time and keeps waiting for creates (they belong to no one and are never
     * listed); none by default.
     */
    default int pooledSandboxes() {
        return 0;
    }

    /**
     * Starts a sandbox and returns once processes can be executed in it.
     *
     * @throws RuntimeStartException when the engine cannot start it; the message is shown to the user
     */
    RuntimeSandbox start(SandboxSpec spec) throws RuntimeStartException;

    /**
     * Starts a sandbox that must not outlive {@code lifetime}, even when this server dies and never comes back: a
     * runtime able to bound it where the sandbox runs (the docker runtime: the container's own init) does so, with a
     * margin after which the server's own timer would have ended it. By default the server's timer is the only
     * bound.
     *
     * @throws RuntimeStartException when the engine cannot start it; the message is shown to the user
     */
    default RuntimeSandbox start(SandboxSpec spec, java.time.Duration lifetime) throws RuntimeStartException {
        return start(spec);
    }

    /**
     * How this runtime builds declarative images ({@code image_spec}); sandboxes are then started from the
     * reference the build returns.
     */
    ai.chalk.compute.server.image.ImageBuilder imageBuilder();

    /**
     * Called once at server start with the ids the store believes are running. Returns the
     * sandboxes the engine still runs and has re-adopted; the rest are reported terminated.
     * Leftovers of sandboxes that are gone (writable layers, cgroups) are cleaned up here.
     */
    Collection<RuntimeSandbox> reconcile(Collection<String> runningIds);

    /** Stops every sandbox this runtime started and releases its resources. */
    @Override
    void close();
}
