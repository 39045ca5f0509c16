package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.session.SessionRegistry;
import java.util.List;
import java.util.concurrent.ScheduledFuture;

/**
 * A sandbox the server is running right now: the runtime's handle, its default working
 * directory, and the sessions opened in it.
 */
public final class LiveSandbox {

    private final String id;
    private final RuntimeSandbox runtimeSandbox;
    private final SessionRegistry sessions = new SessionRegistry();
    private final List<String> volumes;
    private volatile ScheduledFuture<?> lifetimeTimer;
    private volatile boolean suspended;

    LiveSandbox(String id, RuntimeSandbox runtimeSandbox, List<String> volumes) {
        this.id = id;
        this.runtimeSandbox = runtimeSandbox;
        this.volumes = List.copyOf(volumes);
    }

    /** Names of the volumes the sandbox mounts. */
    public List<String> volumes() {
        return volumes;
    }

    public String id() {
        return id;
    }

    /** The runtime's handle, to start processes in the sandbox. */
    public RuntimeSandbox runtime() {
        return runtimeSandbox;
    }

    /** The v2 sessions of this sandbox. */
    public SessionRegistry sessions() {
        return sessions;
    }

    /** Whether the sandbox is suspended: its processes are frozen and it starts no new ones. */
    public boolean suspended() {
        return suspended;
    }

    void suspended(boolean suspended) {
        this.suspended = suspended;
    }

    void lifetimeTimer(ScheduledFuture<?> timer) {
        this.lifetimeTimer = timer;
    }

    void cancelLifetimeTimer() {
        ScheduledFuture<?> t = lifetimeTimer;
        if (t != null) {
            t.cancel(false);
        }
    }
}
