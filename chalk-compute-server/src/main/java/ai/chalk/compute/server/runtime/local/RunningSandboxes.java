package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The sandboxes a local runtime runs and those it is starting, counted together against how many may run at once:
 * a start reserves its place and its id before anything of it exists, so two creates never pass one free place.
 */
final class RunningSandboxes {

    private final int max;
    private final ConcurrentMap<String, LocalSandbox> running = new ConcurrentHashMap<>();
    /** Ids of the sandboxes being started (guarded by this). */
    private final Set<String> starting = new HashSet<>();

    RunningSandboxes(int max) {
        this.max = max;
    }

    /**
     * Reserves a place and the id {@code id} for a sandbox about to start; {@link #add} or {@link #abandon} ends the
     * reservation.
     *
     * @throws RuntimeStartException when every place is taken, or a sandbox with that id runs or is starting
     */
    synchronized void reserve(String id) throws RuntimeStartException {
        if (running.size() + starting.size() >= max) {
            throw new RuntimeStartException("this server runs at most " + max + " sandboxes at"
                    + " once and all are in use: terminate one first, or start the server with a higher limit");
        }
        if (running.containsKey(id) || !starting.add(id)) {
            throw new RuntimeStartException("a sandbox with id " + id + " is already running");
        }
    }

    /** The reserved sandbox did not start. */
    synchronized void abandon(String id) {
        starting.remove(id);
    }

    /** The reserved sandbox runs. */
    synchronized void add(LocalSandbox sandbox) {
        starting.remove(sandbox.id());
        running.put(sandbox.id(), sandbox);
    }

    /** A sandbox that ended. */
    void forget(LocalSandbox sandbox) {
        running.remove(sandbox.id(), sandbox);
    }

    /** Whether a sandbox with id {@code id} runs or is starting. */
    synchronized boolean claims(String id) {
        return running.containsKey(id) || starting.contains(id);
    }

    /** The sandboxes running now. */
    List<LocalSandbox> all() {
        return List.copyOf(running.values());
    }
}
