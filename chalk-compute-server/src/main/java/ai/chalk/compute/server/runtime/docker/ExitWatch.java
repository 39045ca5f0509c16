package ai.chalk.compute.server.runtime.docker;

import com.github.dockerjava.api.command.InspectContainerResponse;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Notices what ends by itself, which no caller is waiting on: a sandbox's container (its init ended it, it ran out
 * of memory, someone removed it outside this server), and an exec's process on this host while a daemon it started
 * still holds its output open (the engine's stream alone would end only when the daemon does). Without it a sandbox
 * whose container is gone would look running, and such an exec would never report its exit.
 */
final class ExitWatch {

    private static final Logger log = LoggerFactory.getLogger(ExitWatch.class);
    private static final long WATCH_MILLIS = 50;

    private final DockerEngine engine;
    private final Executor helpers;
    private final ScheduledExecutorService scheduler;
    private final BooleanSupplier closed;
    private final Predicate<DockerSandbox> current;
    private final Set<DockerProcess> processes = ConcurrentHashMap.newKeySet();

    /**
     * @param closed  whether the runtime is closed: nothing is watched any more
     * @param current whether a sandbox is still the runtime's one of its id: the end of one it let go is not news
     */
    ExitWatch(
            DockerEngine engine,
            Executor helpers,
            ScheduledExecutorService scheduler,
            BooleanSupplier closed,
            Predicate<DockerSandbox> current) {
        this.engine = engine;
        this.helpers = helpers;
        this.scheduler = scheduler;
        this.closed = closed;
        this.current = current;
        scheduler.scheduleWithFixedDelay(this::pollProcesses, WATCH_MILLIS, WATCH_MILLIS, TimeUnit.MILLISECONDS);
    }

    // ---- containers ----

    /** Waits for the container to stop, to notice a sandbox that stops by itself. */
    void container(DockerSandbox sandbox) {
        if (closed.getAsBoolean()) {
            return;
        }
        try {
            engine.onStop(sandbox.containerId(), () -> containerEnded(sandbox));
        } catch (RuntimeException e) {
            log.debug("Cannot watch container of {}: {}", sandbox, e.toString());
        }
    }

    private void containerEnded(DockerSandbox sandbox) {
        if (closed.getAsBoolean() || !current.test(sandbox)) {
            return;
        }
        helpers.execute(() -> {
            Optional<InspectContainerResponse> found;
            try {
                found = engine.inspectIfPresent(sandbox.containerId());
            } catch (RuntimeException e) {
                // the engine is unreachable for the moment: look again shortly
                scheduler.schedule(() -> container(sandbox), 1, TimeUnit.SECONDS);
                return;
            }
            if (found.isEmpty()) {
                sandbox.containerStopped("the sandbox's container was removed outside this server");
                return;
            }
            InspectContainerResponse inspected = found.get();
            if (Boolean.TRUE.equals(inspected.getState().getRunning())) {
                scheduler.schedule(() -> container(sandbox), 100, TimeUnit.MILLISECONDS);
                return;
            }
            String reason = Boolean.TRUE.equals(inspected.getState().getOOMKilled())
                    ? "the sandbox's container ran out of memory and was stopped"
                    : "the sandbox's container stopped" + DockerEngine.exitDetail(inspected);
            sandbox.containerStopped(reason);
        });
    }

    // ---- exec processes ----

    /** Starts watching an exec's host process, to notice its end while a daemon holds its output open. */
    void process(DockerProcess p) {
        processes.add(p);
    }

    void forget(DockerProcess p) {
        processes.remove(p);
    }

    private void pollProcesses() {
        try {
            for (DockerProcess p : processes) {
                if (p.exited()) {
                    processes.remove(p);
                } else if (p.hostProcessGone()) {
                    processes.remove(p);
                    p.hostProcessExited();
                }
            }
        } catch (RuntimeException e) {
            log.debug("Watching exec processes: {}", e.toString());
        }
    }
}
