package ai.chalk.compute.server.sandbox;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.threads.EnvironmentShares;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A sandbox the server is running right now: the runtime's handle, the volumes it mounts, and what other parts of
 * the server keep for it while it runs (its attachments, such as the v2 sessions opened in it).
 */
public final class LiveSandbox {

    private static final Logger log = LoggerFactory.getLogger(LiveSandbox.class);

    private final String id;
    private final String environment;
    private final RuntimeSandbox runtimeSandbox;
    /** Guarded by itself; once the sandbox has ended, attachments are closed as they are made. */
    private final Map<Class<?>, AutoCloseable> attachments = new ConcurrentHashMap<>();

    private boolean ended;
    private final List<String> volumes;
    private final EnvironmentShares.Place place;
    private volatile ScheduledFuture<?> lifetimeTimer;
    private volatile boolean suspended;

    LiveSandbox(
            String id,
            String environment,
            RuntimeSandbox runtimeSandbox,
            List<String> volumes,
            EnvironmentShares.Place place) {
        this.id = id;
        this.environment = environment;
        this.runtimeSandbox = runtimeSandbox;
        this.volumes = List.copyOf(volumes);
        this.place = place;
    }

    /** Its place among its environment's sandboxes, given back once it has stopped. */
    EnvironmentShares.Place place() {
        return place;
    }

    /** The environment the sandbox belongs to. */
    public String environment() {
        return environment;
    }

    /** Names of the volumes (of its environment) the sandbox mounts. */
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

    /**
     * What the part of the server that owns {@code type} keeps for this sandbox, made by {@code create} the first
     * time; it is closed when the sandbox ends (at once when it has ended already), so that nothing is left running
     * or reserved for a sandbox that is gone.
     */
    public <T extends AutoCloseable> T attachment(Class<T> type, Supplier<T> create) {
        synchronized (attachments) {
            AutoCloseable existing = attachments.get(type);
            if (existing != null) {
                return type.cast(existing);
            }
            T made = create.get();
            attachments.put(type, made);
            if (ended) {
                closeQuietly(made);
            }
            return made;
        }
    }

    /** The sandbox has ended: its attachments are closed. */
    void ended() {
        List<AutoCloseable> all;
        synchronized (attachments) {
            ended = true;
            all = List.copyOf(attachments.values());
        }
        all.forEach(this::closeQuietly);
    }

    private void closeQuietly(AutoCloseable attachment) {
        try {
            attachment.close();
        } catch (Exception e) {
            log.warn(
                    "Closing {} of sandbox {} failed: {}", attachment.getClass().getSimpleName(), id, e.toString());
        }
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
