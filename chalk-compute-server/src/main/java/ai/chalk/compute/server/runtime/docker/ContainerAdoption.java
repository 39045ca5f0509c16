package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.RuntimeSandbox;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.Container;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes back, after a restart, the containers an earlier run of this server left on the engine (found by its
 * {@value DockerRuntime#LABEL_SERVER} label): one still running whose sandbox the store still believes running is a
 * sandbox again, cleared of what execs cut by the restart left running (nobody could ever read, signal or wait for
 * those); every other one is removed, and with it its staged volumes. Apart from the runtime because it is the one
 * place that acts on containers this run did not create, and what it keeps alive or kills is decided here alone.
 */
final class ContainerAdoption {

    private static final Logger log = LoggerFactory.getLogger(ContainerAdoption.class);

    private final DockerRuntime runtime;
    private final DockerEngine engine;
    private final ConcurrentMap<String, DockerSandbox> sandboxes;
    private final ExitWatch exits;
    private final VolumeMounts volumes;

    /** @param sandboxes the runtime's sandboxes by id, which adopted ones join */
    ContainerAdoption(
            DockerRuntime runtime,
            DockerEngine engine,
            ConcurrentMap<String, DockerSandbox> sandboxes,
            ExitWatch exits,
            VolumeMounts volumes) {
        this.runtime = runtime;
        this.engine = engine;
        this.sandboxes = sandboxes;
        this.exits = exits;
        this.volumes = volumes;
    }

    /** Adopts or removes each container of this server; see {@link DockerRuntime#reconcile}. */
    Collection<RuntimeSandbox> reconcile(Collection<String> runningIds) {
        List<Container> containers;
        try {
            containers = engine.containersLabelled(DockerRuntime.LABEL_SERVER, runtime.key());
        } catch (RuntimeException e) {
            log.warn("Cannot list the containers of this server: {}", DockerEngine.engineMessage(e));
            return List.of();
        }
        List<RuntimeSandbox> adopted = new ArrayList<>();
        for (Container c : containers) {
            String id = c.getLabels() == null ? null : c.getLabels().get(DockerRuntime.LABEL_SANDBOX);
            if (id != null && sandboxes.containsKey(id)) {
                continue; // started by this runtime
            }
            boolean proxied = c.getLabels() != null && c.getLabels().containsKey(DockerEgress.LABEL_EGRESS);
            // a sandbox with a network policy lost its proxy (and the policy's secrets) with the server: not adopted
            if (id != null && runningIds.contains(id) && !proxied) {
                try {
                    InspectContainerResponse inspected = engine.inspect(c.getId());
                    if (Boolean.TRUE.equals(inspected.getState().getRunning())) {
                        String workdir = inspected.getConfig().getWorkingDir();
                        DockerSandbox sandbox = new DockerSandbox(
                                runtime,
                                id,
                                c.getId(),
                                workdir == null || workdir.isBlank() ? "/" : workdir,
                                runtime.hostOf(inspected),
                                Boolean.TRUE.equals(inspected.getState().getPaused()));
                        if (sandboxes.putIfAbsent(id, sandbox) == null) {
                            // a paused one's processes die when it is resumed... or never: left for terminate
                            int killed =
                                    Boolean.TRUE.equals(inspected.getState().getPaused())
                                            ? 0
                                            : sandbox.killUnrecorded();
                            if (killed > 0) {
                                log.info(
                                        "Killed {} process(es) that execs cut by the restart left in sandbox {}",
                                        killed,
                                        id);
                            }
                            exits.container(sandbox);
                            adopted.add(sandbox);
                            log.info("Adopted sandbox {} (container {}) from an earlier run", id, c.getId());
                            continue;
                        }
                    }
                } catch (RuntimeException e) {
                    log.warn("Cannot adopt sandbox {}: {}", id, DockerEngine.engineMessage(e));
                }
            }
            engine.removeContainer(c.getId());
            log.info("Removed leftover container {} of sandbox {}", c.getId(), id);
        }
        List<String> kept = new ArrayList<>(sandboxes.keySet());
        volumes.releaseAllBut(kept); // the staged volumes of containers removed above, or gone with a crash
        return adopted;
    }
}
