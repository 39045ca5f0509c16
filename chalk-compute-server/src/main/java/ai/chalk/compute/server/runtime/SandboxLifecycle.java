package ai.chalk.compute.server.runtime;

import ai.chalk.compute.server.runtime.host.HostSignals;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state machine every runtime's sandbox shares (runc's {@code state_linux.go} is the model): running, stopping,
 * stopped; who may start work while it runs; suspend, resume and snapshot over one freeze that both hold; and one
 * release, whether a terminate or the sandbox itself ended it. A runtime supplies what its engine does
 * ({@link Engine}: freeze, thaw, SIGTERM, release) and nothing of the bookkeeping.
 *
 * <p>Work that needs the sandbox running (an exec, a snapshot) holds the read lock for as long as it uses the
 * sandbox's resources; stopping takes the write lock only to change the state, so it waits for that work to begin or
 * be refused, and release waits for none of it except what holds the lock (a snapshot's copy, which must not see its
 * layer deleted underneath).
 */
public final class SandboxLifecycle {

    private static final Logger log = LoggerFactory.getLogger(SandboxLifecycle.class);

    /** What one runtime does for a sandbox's lifecycle. */
    public interface Engine {

        /** Freezes every process of the sandbox, those that join meanwhile included; a failure says why. */
        void freeze() throws Exception;

        /** Lets the frozen processes run again; a failure says why. */
        void thaw() throws Exception;

        /** Sends SIGTERM to the sandbox's processes and waits for them to end, until {@code deadlineNanos}. */
        void sigterm(long deadlineNanos);

        /** Records that the sandbox's processes are about to be killed with {@code signal} by its stop. */
        void stopSignal(int signal);

        /** Called once, first, when the sandbox starts stopping: work kept ready for later execs is dropped. */
        default void stopping() {}

        /** Kills what is left and removes the sandbox's resources; a failure is logged by the caller. */
        void release();

        /** Called once the sandbox is stopped: the runtime lets go of it. */
        void forget();
    }

    /** A copy of the sandbox's files, with the sandbox frozen where it can be. */
    @FunctionalInterface
    public interface Copy<T> {
        T run() throws SandboxOperationException, IOException;
    }

    /** Work that needs the sandbox running. */
    @FunctionalInterface
    public interface Work<T, E extends Exception> {
        T run() throws E;
    }

    private enum State {
        RUNNING,
        STOPPING,
        STOPPED
    }

    private final String id;
    private final Engine engine;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final CompletableFuture<String> stopped = new CompletableFuture<>();
    private volatile State state = State.RUNNING;
    private boolean released;
    /** Guards the freeze: {@link #suspended}, {@link #snapshotting} and {@link #frozen}. */
    private final Object freezeLock = new Object();

    private boolean suspended;
    private int snapshotting;
    private boolean frozen;

    /**
     * @param id        the sandbox's id, for messages
     * @param engine    what its runtime does
     * @param suspended whether the sandbox starts suspended (frozen), as an adopted paused container does
     */
    public SandboxLifecycle(String id, Engine engine, boolean suspended) {
        this.id = id;
        this.engine = engine;
        this.suspended = suspended;
        this.frozen = suspended;
    }

    /** Whether the sandbox is running (not stopping or stopped). */
    public boolean running() {
        return state == State.RUNNING;
    }

    /** Whether the sandbox is suspended (by {@link #suspend}, not by a snapshot). */
    public boolean suspended() {
        synchronized (freezeLock) {
            return suspended;
        }
    }

    /** Whether the sandbox's processes are frozen right now (suspended or being snapshotted). */
    public boolean frozen() {
        synchronized (freezeLock) {
            return frozen;
        }
    }

    /** Why work cannot start now, for messages; null while the sandbox runs. */
    public String notRunning() {
        return state == State.RUNNING ? null : "sandbox " + id + " is not running";
    }

    /**
     * Runs {@code work} while the sandbox cannot start stopping; a {@link ProcessStartException} when it is not
     * running.
     */
    public <T> T exec(Work<T, ProcessStartException> work) throws ProcessStartException {
        lock.readLock().lock();
        try {
            if (state != State.RUNNING) {
                throw new ProcessStartException("sandbox " + id + " is not running");
            }
            return work.run();
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Runs {@code work} only if the sandbox is running, and keeps a stop from beginning meanwhile; null, without
     * running it, when the sandbox is not running or a stop is waiting (this never queues behind one).
     */
    public <T> T ifRunningNow(java.util.function.Supplier<T> work) {
        if (!lock.readLock().tryLock()) {
            return null;
        }
        try {
            return state == State.RUNNING ? work.get() : null;
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Freezes the sandbox until {@link #resume}; a suspended sandbox stays suspended. */
    public void suspend() throws SandboxOperationException {
        lock.readLock().lock();
        try {
            requireRunning("suspended");
            synchronized (freezeLock) {
                if (suspended) {
                    return;
                }
                freezeLocked("suspend");
                suspended = true;
            }
        } finally {
            lock.readLock().unlock();
        }
        log.debug("Sandbox {} suspended", id);
    }

    /** Lets a suspended sandbox run again (once any snapshot in progress is done with it). */
    public void resume() throws SandboxOperationException {
        lock.readLock().lock();
        try {
            requireRunning("resumed");
            synchronized (freezeLock) {
                if (!suspended) {
                    return;
                }
                suspended = false;
                if (snapshotting == 0) {
                    thawLocked();
                }
            }
        } finally {
            lock.readLock().unlock();
        }
        log.debug("Sandbox {} resumed", id);
    }

    /**
     * Runs {@code copy} with the sandbox frozen (when {@code freeze}) and running; a stop meanwhile waits for the copy.
     * Snapshots may overlap one another and a suspend: the sandbox thaws when the last of them is done and it is not
     * suspended.
     */
    public <T> T snapshot(boolean freeze, Copy<T> copy) throws SandboxOperationException, IOException {
        lock.readLock().lock();
        try {
            requireRunning("snapshotted");
            synchronized (freezeLock) {
                if (freeze) {
                    freezeLocked("snapshot");
                }
                snapshotting++;
            }
            try {
                return copy.run();
            } finally {
                synchronized (freezeLock) {
                    snapshotting--;
                    if (frozen && !suspended && snapshotting == 0) {
                        thawLocked();
                    }
                }
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    private void requireRunning(String what) throws SandboxOperationException {
        if (state != State.RUNNING) {
            throw new SandboxOperationException("sandbox " + id + " cannot be " + what + ": it is "
                    + (state == State.STOPPING ? "stopping" : "stopped"));
        }
    }

    private void freezeLocked(String why) throws SandboxOperationException {
        if (!frozen) {
            try {
                engine.freeze();
            } catch (Exception e) {
                throw new SandboxOperationException(
                        "cannot freeze sandbox " + id + " for the " + why + ": " + e.getMessage(), e);
            }
            frozen = true;
        }
    }

    private void thawLocked() throws SandboxOperationException {
        if (frozen) {
            try {
                engine.thaw();
            } catch (Exception e) {
                throw new SandboxOperationException("cannot thaw sandbox " + id + ": " + e.getMessage(), e);
            }
            frozen = false;
        }
    }

    /**
     * Stops the sandbox: SIGTERM to its processes and up to {@code grace} for them to end, then everything is killed
     * and removed. Idempotent; a second caller waits for the first one's stop.
     */
    public void terminate(Duration grace) {
        if (!startStopping()) {
            stopped.join(); // someone else is stopping it
            return;
        }
        // a frozen process would neither see its SIGTERM nor die of a SIGKILL
        synchronized (freezeLock) {
            suspended = false;
            try {
                thawLocked();
            } catch (SandboxOperationException e) {
                log.warn("Cannot thaw sandbox {} to stop it: {}", id, e.getMessage());
            }
        }
        engine.stopping();
        long graceNanos = Math.max(0, grace.toNanos());
        if (graceNanos > 0) {
            try {
                engine.sigterm(System.nanoTime() + graceNanos);
            } catch (RuntimeException e) {
                log.debug("SIGTERM to the processes of sandbox {} failed: {}", id, e.toString());
            }
        }
        engine.stopSignal(HostSignals.SIGKILL);
        release("terminated");
    }

    /**
     * The sandbox ended by itself (its init or container is gone): unless a stop is under way, what is left is
     * released with {@code reason} as the stop's reason.
     */
    public void endedByItself(java.util.function.Supplier<String> reason) {
        if (!startStopping()) {
            return;
        }
        engine.stopping();
        String why = reason.get();
        log.info("Sandbox {} stopped by itself: {}", id, why);
        engine.stopSignal(HostSignals.SIGKILL);
        release(why);
    }

    /** Whether this caller moved the sandbox from running to stopping. */
    private boolean startStopping() {
        lock.writeLock().lock();
        try {
            if (state != State.RUNNING) {
                return false;
            }
            state = State.STOPPING;
            return true;
        } finally {
            lock.writeLock().unlock();
        }
    }

    private void release(String reason) {
        synchronized (this) {
            if (released) {
                return;
            }
            released = true;
        }
        try {
            engine.release();
        } catch (RuntimeException e) {
            log.warn("Releasing sandbox {} failed: {}", id, e.toString(), e);
        } finally {
            state = State.STOPPED;
            engine.forget();
            stopped.complete(reason);
        }
    }

    /** Completes with the reason once the sandbox has stopped and its resources are gone. */
    public CompletableFuture<String> onStopped() {
        return stopped;
    }
}
