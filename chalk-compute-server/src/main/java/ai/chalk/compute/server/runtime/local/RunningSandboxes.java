package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.jspecify.annotations.Nullable;

/**
 * The sandboxes a local runtime runs, those it is starting and those started ahead of time waiting in its
 * {@link SandboxPool}, counted together against how many may run at once: a start reserves its place and its id
 * before anything of it exists, so two creates never pass one free place. A create that finds every place taken while
 * some are held by the pool takes one of those instead (the pool gives it up).
 */
final class RunningSandboxes {

    private final int max;
    private final ConcurrentMap<String, LocalSandbox> running = new ConcurrentHashMap<>();
    /** Ids of the sandboxes being started (guarded by this). */
    private final Set<String> starting = new HashSet<>();
    /** Names of the sandboxes the pool holds or is starting (guarded by this). */
    private final Set<String> pooled = new HashSet<>();

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
        reserve(id, null);
    }

    /**
     * As {@link #reserve(String)}, for a sandbox that takes over the pool's sandbox {@code fromPool} (its place), or,
     * with null, a place of its own.
     */
    synchronized void reserve(String id, @Nullable String fromPool) throws RuntimeStartException {
        if (fromPool == null && running.size() + starting.size() + pooled.size() >= max) {
            throw RuntimeStartException.full(max);
        }
        if (running.containsKey(id) || starting.contains(id)) {
            throw new RuntimeStartException("a sandbox with id " + id + " is already running");
        }
        starting.add(id);
        if (fromPool != null) {
            pooled.remove(fromPool);
        }
    }

    /** Whether every place is taken, some of them by the pool. */
    synchronized boolean fullWithPooled() {
        return running.size() + starting.size() + pooled.size() >= max && !pooled.isEmpty();
    }

    /**
     * Reserves a place for a sandbox the pool starts ahead of time, named {@code name}; false when the places left
     * are wanted by creates ({@code spare} of them are kept free of the pool).
     */
    synchronized boolean reservePooled(String name, int spare) {
        if (running.size() + starting.size() + pooled.size() + spare >= max) {
            return false;
        }
        return pooled.add(name);
    }

    /** The pool's sandbox {@code name} is gone (or never started). */
    synchronized void releasePooled(String name) {
        pooled.remove(name);
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

    /**
     * Whether the state directory or cgroups named {@code name} belong to a sandbox that runs (by id, or by the name
     * it had in the pool), is starting, or waits in the pool.
     */
    synchronized boolean claims(String name) {
        return running.containsKey(name)
                || starting.contains(name)
                || pooled.contains(name)
                || running.values().stream().anyMatch(s -> s.name().equals(name));
    }

    /** The sandboxes running now. */
    List<LocalSandbox> all() {
        return List.copyOf(running.values());
    }
}
