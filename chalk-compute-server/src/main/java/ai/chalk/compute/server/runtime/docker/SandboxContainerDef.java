package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.SandboxSpec.ResourceLimits;
import ai.chalk.compute.server.runtime.SandboxSpec.VolumeBinding;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import ai.chalk.compute.server.runtime.network.TcpMemory;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.model.AccessMode;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.LogConfig;
import com.github.dockerjava.api.model.Mount;
import com.github.dockerjava.api.model.MountType;
import com.github.dockerjava.api.model.Ulimit;
import com.github.dockerjava.api.model.Volume;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The container a sandbox runs in, as the engine is asked to create it: every setting that bounds what a sandbox can
 * do (capabilities, no-new-privileges, cpu, memory and pids limits, network, mounts) and what finds it again after a
 * restart (name, labels), in one reviewable value. It is a definition, kept apart from the running handle
 * ({@link DockerSandbox}) as Testcontainers keeps {@code ContainerDef} apart from {@code ContainerState}, so that
 * what a sandbox is given is read in one place instead of out of the runtime's start sequence.
 *
 * @param sandboxId the sandbox's id (its container's name, host name and label)
 * @param image     the image, already on the engine
 * @param workdir   the working directory of the container's processes, absolute and normalized
 * @param env       the environment, as {@code NAME=value} entries in the spec's order
 * @param network   whether the sandbox is granted the network ({@link NetworkFence#SANDBOXES}), else loopback only
 * @param limits    cpu and memory limits
 * @param binds     the volumes as the container binds them
 * @param serverKey the {@value DockerRuntime#LABEL_SERVER} label of the runtime that owns the container
 * @param endAfter  when the container's init ends it by itself (lifetime plus margin); empty for never
 * @param egress    the sandbox's own network to the egress proxy when it has a network policy ({@link DockerEgress});
 *                  empty for none
 * @param terminals the container's own {@code devpts} on the host ({@link ContainerTerminals}), mounted at
 *                  {@value #TERMINALS}; empty for the engine's
 * @param cgroupParent the group of all of the runtime's containers ({@link ContainersGroup}); empty for the engine's
 */
record SandboxContainerDef(
        String sandboxId,
        String image,
        String workdir,
        List<String> env,
        boolean network,
        ResourceLimits limits,
        List<Bind> binds,
        String serverKey,
        Optional<Duration> endAfter,
        Optional<String> egress,
        Optional<Path> terminals,
        Optional<String> cgroupParent) {

    /** Names the environment's variables without their values, which may be secrets. */
    @Override
    public String toString() {
        return "SandboxContainerDef[sandboxId=" + sandboxId + ", image=" + image + ", workdir=" + workdir + ", env="
                + env.stream()
                        .map(e -> e.substring(0, Math.max(0, e.indexOf('='))))
                        .toList() + ", network="
                + network + ", limits=" + limits + ", binds=" + binds + ", endAfter=" + endAfter + ", egress=" + egress
                + ", terminals=" + terminals + ", cgroupParent=" + cgroupParent + "]";
    }

    /** The engine's log of a container: one file of at most 1 MiB. */
    static final Map<String, String> LOG_OPTIONS = Map.of("max-size", "1m", "max-file", "1");

    /** How many processes (and threads) one sandbox may have at once. */
    static final long PIDS_MAX = 4096;
    /** Files a sandbox's process may have open, as on the local runtime. */
    static final int OPEN_FILES = ai.chalk.compute.server.runtime.local.SandboxDefaults.STANDARD.openFiles();

    /** Capabilities a sandbox keeps; every other one is dropped. */
    static final List<Capability> KEPT_CAPABILITIES = List.of(
            Capability.CHOWN,
            Capability.DAC_OVERRIDE,
            Capability.FOWNER,
            Capability.FSETID,
            Capability.KILL,
            Capability.SETGID,
            Capability.SETUID,
            Capability.NET_BIND_SERVICE);

    SandboxContainerDef {
        env = List.copyOf(env);
        binds = List.copyOf(binds);
    }

    /**
     * The container of {@code spec}.
     *
     * @param image         the image to run (the spec's, or the runtime's default)
     * @param workdir       the working directory (the image's WORKDIR when it declares one, else the spec's)
     * @param env           the spec's environment, checked
     * @param volumeSources for each of the spec's volumes, the path the container binds (its staged mount, or the
     *                      volume itself where volumes cannot be staged; see {@link VolumeMounts})
     * @param serverKey     the owning runtime's key
     * @param endAfter      when the container ends itself; empty for never
     * @param cgroupParent  the capped group of all of the runtime's containers; empty for the engine's
     */
    static SandboxContainerDef of(
            SandboxSpec spec,
            String image,
            String workdir,
            Map<String, String> env,
            List<Path> volumeSources,
            String serverKey,
            Optional<Duration> endAfter,
            Optional<String> cgroupParent) {
        List<String> envList = new ArrayList<>();
        env.forEach((k, v) -> envList.add(k + "=" + v));
        return new SandboxContainerDef(
                spec.id(),
                image,
                workdir,
                envList,
                spec.network(),
                spec.limits(),
                binds(spec.volumes(), volumeSources),
                serverKey,
                endAfter,
                Optional.empty(),
                Optional.empty(),
                cgroupParent);
    }

    /** This container on {@code network}, the egress network of its policy, with the egress proxy's binds. */
    SandboxContainerDef withEgress(String network, List<Bind> egressBinds) {
        List<Bind> all = new ArrayList<>(binds);
        all.addAll(egressBinds);
        return new SandboxContainerDef(
                sandboxId,
                image,
                workdir,
                env,
                false,
                limits,
                all,
                serverKey,
                endAfter,
                Optional.of(network),
                terminals,
                cgroupParent);
    }

    /**
     * This container with {@code ptys}, a {@code devpts} of its own ({@link ContainerTerminals}), at {@code /dev/pts}:
     * a mount there replaces the engine's unlimited one. A mount, not a bind: for a missing source (a container started
     * again after its terminals were released) the engine fails the start instead of making a writable directory there.
     */
    SandboxContainerDef withTerminals(Path ptys) {
        return new SandboxContainerDef(
                sandboxId,
                image,
                workdir,
                env,
                network,
                limits,
                binds,
                serverKey,
                endAfter,
                egress,
                Optional.of(ptys),
                cgroupParent);
    }

    /** Where a container's terminals are. */
    static final String TERMINALS = "/dev/pts";

    /**
     * The container's binds: the staged {@code nosuid,nodev} mounts, bound as they are (their flags, read-only
     * included, carry over; the engine's own read-only remount would drop nosuid and nodev), or, where volumes cannot
     * be staged, the volumes themselves.
     */
    private static List<Bind> binds(List<VolumeBinding> bindings, List<Path> sources) {
        List<Bind> binds = new ArrayList<>();
        for (int i = 0; i < bindings.size(); i++) {
            VolumeBinding v = bindings.get(i);
            boolean staged = !sources.get(i).equals(v.source());
            binds.add(new Bind(
                    sources.get(i).toString(),
                    new Volume(v.mountPath()),
                    v.readOnly() && !staged ? AccessMode.ro : AccessMode.rw));
        }
        return binds;
    }

    /** The container's name. */
    String containerName() {
        return DockerRuntime.containerName(sandboxId);
    }

    /**
     * The engine's side of the container: the engine's own init is off because pid 1 is this runtime's
     * ({@link Scripts#INIT}); memory and swap are the same number, so there is no swap; its sockets' TCP buffers are
     * charged to its memory group from its first process on, up to its share of the host's ({@link TcpMemory}: on cgroup
     * v1 the kernel charges them to no group otherwise).
     */
    HostConfig hostConfig() {
        HostConfig hostConfig = new SocketBufferLimit(
                        TcpMemory.forOneSandbox(limits.memoryBytes().orElse(Long.MAX_VALUE)))
                .withNetworkMode(egress.orElse(network ? NetworkFence.SANDBOXES : "none"))
                .withCapDrop(Capability.ALL)
                .withCapAdd(KEPT_CAPABILITIES.toArray(Capability[]::new))
                .withSecurityOpts(List.of("no-new-privileges"))
                .withPidsLimit(PIDS_MAX)
                // the local runtime's bound (the engine's default is a million per process)
                .withUlimits(List.of(new Ulimit("nofile", (long) OPEN_FILES, (long) OPEN_FILES)))
                .withInit(false)
                // what pid 1 writes is kept by the engine: any exec can write there (/proc/1/fd/1), and the default
                // json-file log has no size, so a sandbox filled the host's disk with it. The server reads the last
                // lines of a container that failed to start, and nothing more
                .withLogConfig(new LogConfig(LogConfig.LoggingType.JSON_FILE, LOG_OPTIONS))
                .withBinds(binds);
        terminals.ifPresent(ptys -> hostConfig.withMounts(List.of(
                new Mount().withType(MountType.BIND).withSource(ptys.toString()).withTarget(TERMINALS))));
        limits.milliCpus().ifPresent(m -> hostConfig.withNanoCPUs(m * 1_000_000L));
        limits.memoryBytes().ifPresent(m -> hostConfig.withMemory(m).withMemorySwap(m));
        cgroupParent.ifPresent(hostConfig::withCgroupParent);
        return hostConfig;
    }

    /**
     * Sets this definition on a create command: pid 1 is the init loop, given the seconds after which it ends the
     * container when there is a lifetime; the engine's stop timeout is the grace {@link DockerRuntime#close()} gives.
     */
    CreateContainerCmd applyTo(CreateContainerCmd cmd) {
        return cmd.withName(containerName())
                .withHostName(SandboxHostname.of(sandboxId))
                .withLabels(labels())
                .withEntrypoint("/bin/sh", "-c", Scripts.INIT)
                .withCmd(endAfter.map(d -> List.of("chalk-init", Long.toString(seconds(d))))
                        .orElse(List.of("chalk-init")))
                .withStopTimeout((int) DockerRuntime.CLOSE_GRACE.toSeconds())
                .withEnv(env)
                .withWorkingDir(workdir)
                .withHostConfig(hostConfig());
    }

    private Map<String, String> labels() {
        Map<String, String> labels = new java.util.LinkedHashMap<>();
        labels.put(DockerRuntime.LABEL_SANDBOX, sandboxId);
        labels.put(DockerRuntime.LABEL_SERVER, serverKey);
        egress.ifPresent(n -> labels.put(DockerEgress.LABEL_EGRESS, n));
        return labels;
    }

    /** Whole seconds, rounded up, at least one: the init counts by {@code date +%s}. */
    private static long seconds(Duration d) {
        return Math.max(1, (d.toMillis() + 999) / 1000);
    }

    /**
     * A host configuration with the engine's {@code KernelMemoryTCP}, which docker-java has no field for: the engine
     * sets the container's {@code memory.kmem.tcp.limit_in_bytes} as it creates its groups, before the image's first
     * process runs (set later, a socket made before would never be charged). Engines that no longer read it leave it
     * to {@link ContainerSocketBuffers}.
     */
    static final class SocketBufferLimit extends HostConfig {
        private static final long serialVersionUID = 1L;

        @JsonProperty("KernelMemoryTCP")
        private final long kernelMemoryTcp;

        SocketBufferLimit(long bytes) {
            this.kernelMemoryTcp = bytes;
        }

        long kernelMemoryTcp() {
            return kernelMemoryTcp;
        }
    }
}
