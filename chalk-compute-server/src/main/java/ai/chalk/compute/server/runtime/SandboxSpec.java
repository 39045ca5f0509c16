package ai.chalk.compute.server.runtime;

import ai.chalk.compute.server.egress.EgressPolicy;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What a runtime needs to start one sandbox. A client's request has been checked by the service layer, which names
 * the request's fields in its errors; the spec itself holds its invariants (a safe id, a normalized absolute workdir,
 * a well-formed environment, normalized mount paths below {@code /}, one volume per path) so that no runtime checks
 * them again. A spec breaking one is a bug of its caller: {@link IllegalArgumentException}.
 *
 * @param id         the sandbox id (unique; up to 128 letters, digits, '.', '_' and '-', so safe as a file name)
 * @param image      the image reference the user asked for; empty for the runtime's default (the local runtime:
 *                   the host's read-only system view)
 * @param env        environment of every process in the sandbox (exec env is layered on top)
 * @param workdir    default working directory for execs, absolute inside the sandbox (normalized; blank for
 *                   {@code /}); a runtime running an image
 *                   that declares its own (a Dockerfile's WORKDIR, an image spec's workdir) uses the image's
 * @param limits     cpu and memory limits, parsed
 * @param network    whether the sandbox may reach the whole network beyond its own loopback (a runtime keeps the
 *                   server's host and cloud metadata out of reach even then)
 * @param entrypoint an optional long-running process started with the sandbox; empty for none
 * @param volumes    host directories mounted into the sandbox (read-write unless a binding says read-only)
 * @param initialFilesystem a directory on the host (the server's, e.g. a snapshot taken with
 *                   {@link RuntimeSandbox#snapshot}) whose contents are copied into the new sandbox's
 *                   writable layer before it starts; empty for a fresh layer. It is only read.
 * @param egress     a network policy: the sandbox's only way out is then the server's egress proxy, which enforces
 *                   it (with its secrets resolved); empty for none. Never together with {@code network}.
 */
public record SandboxSpec(
        String id,
        String image,
        Map<String, String> env,
        String workdir,
        ResourceLimits limits,
        boolean network,
        List<String> entrypoint,
        List<VolumeBinding> volumes,
        Optional<Path> initialFilesystem,
        Optional<EgressPolicy> egress) {

    private static final Pattern SAFE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    public SandboxSpec {
        if (id == null || !SAFE_ID.matcher(id).matches()) {
            throw new IllegalArgumentException(
                    "invalid sandbox id \"" + id + "\": use up to 128 letters, digits, '.', '_' and '-'");
        }
        image = image == null ? "" : image.strip();
        workdir = normalizedAbsolute("workdir", workdir == null || workdir.isBlank() ? "/" : workdir);
        try {
            env = Collections.unmodifiableMap(ProcessSpecCheck.env(env));
        } catch (ProcessStartException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        limits = Objects.requireNonNull(limits, "limits");
        entrypoint = List.copyOf(entrypoint);
        volumes = List.copyOf(volumes);
        Set<String> mountPaths = new HashSet<>();
        for (VolumeBinding v : volumes) {
            if (!mountPaths.add(v.mountPath())) {
                throw new IllegalArgumentException("two volumes are mounted at " + v.mountPath());
            }
        }
        initialFilesystem = Objects.requireNonNull(initialFilesystem, "initialFilesystem");
        egress = Objects.requireNonNull(egress, "egress");
        if (network && egress.isPresent()) {
            throw new IllegalArgumentException("a sandbox has either the whole network or a network policy");
        }
    }

    /** A spec without a network policy. */
    public SandboxSpec(
            String id,
            String image,
            Map<String, String> env,
            String workdir,
            ResourceLimits limits,
            boolean network,
            List<String> entrypoint,
            List<VolumeBinding> volumes,
            Optional<Path> initialFilesystem) {
        this(id, image, env, workdir, limits, network, entrypoint, volumes, initialFilesystem, Optional.empty());
    }

    /**
     * Names the environment's variables without their values: a value may be a secret the sandbox was given, and a
     * spec reaches log lines and exception messages.
     */
    @Override
    public String toString() {
        return "SandboxSpec[id=" + id + ", image=" + image + ", env=" + env.keySet() + ", workdir=" + workdir
                + ", limits=" + limits + ", network=" + network + ", entrypoint=" + entrypoint + ", volumes=" + volumes
                + ", initialFilesystem=" + initialFilesystem + ", egress=" + egress + "]";
    }

    /** {@code path} normalized ({@code /a/./b/../c} is {@code /a/c}); it must be absolute and free of NUL. */
    private static String normalizedAbsolute(String what, String path) {
        if (!path.startsWith("/") || path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("the sandbox " + what + " must be an absolute path: " + path);
        }
        return Path.of(path).normalize().toString();
    }

    /** A spec with a fresh writable layer. */
    public SandboxSpec(
            String id,
            String image,
            Map<String, String> env,
            String workdir,
            ResourceLimits limits,
            boolean network,
            List<String> entrypoint,
            List<VolumeBinding> volumes) {
        this(id, image, env, workdir, limits, network, entrypoint, volumes, Optional.empty());
    }

    /** A spec without volumes. */
    public SandboxSpec(
            String id,
            String image,
            Map<String, String> env,
            String workdir,
            ResourceLimits limits,
            boolean network,
            List<String> entrypoint) {
        this(id, image, env, workdir, limits, network, entrypoint, List.of());
    }

    /** This spec with another image (the one built for an image spec). */
    public SandboxSpec withImage(String image) {
        return new SandboxSpec(
                id, image, env, workdir, limits, network, entrypoint, volumes, initialFilesystem, egress);
    }

    /** This spec with a memory limit of {@code bytes} unless it sets one. */
    public SandboxSpec withMemoryUnlessSet(long bytes) {
        if (limits.memoryBytes().isPresent()) {
            return this;
        }
        return new SandboxSpec(
                id,
                image,
                env,
                workdir,
                new ResourceLimits(limits.milliCpus(), Optional.of(bytes)),
                network,
                entrypoint,
                volumes,
                initialFilesystem,
                egress);
    }

    /** This spec with more variables (they win over the spec's own) and more bindings. */
    public SandboxSpec with(Map<String, String> moreEnv, List<VolumeBinding> moreVolumes) {
        Map<String, String> e = new java.util.LinkedHashMap<>(env);
        e.putAll(moreEnv);
        List<VolumeBinding> v = new java.util.ArrayList<>(volumes);
        v.addAll(moreVolumes);
        return new SandboxSpec(id, image, e, workdir, limits, network, entrypoint, v, initialFilesystem, egress);
    }

    /** This spec with a network policy enforced by the egress proxy instead of any other network. */
    public SandboxSpec withEgress(EgressPolicy policy) {
        return new SandboxSpec(
                id, image, env, workdir, limits, false, entrypoint, volumes, initialFilesystem, Optional.of(policy));
    }

    /**
     * A host directory mounted at {@code mountPath} inside the sandbox.
     *
     * @param source    the directory on the host (the server's, never a client's path)
     * @param mountPath an absolute path inside the sandbox below {@code /} (normalized)
     * @param readOnly  whether the sandbox may only read it (e.g. a function's code); volumes are read-write
     */
    public record VolumeBinding(Path source, String mountPath, boolean readOnly) {

        public VolumeBinding {
            Objects.requireNonNull(source, "source");
            mountPath = normalizedAbsolute("mount path", mountPath);
            if (mountPath.equals("/")) {
                throw new IllegalArgumentException("a volume cannot be mounted at /: mount it below, e.g. /data");
            }
        }

        /** A read-write binding (a volume). */
        public VolumeBinding(Path source, String mountPath) {
            this(source, mountPath, false);
        }
    }

    /**
     * CPU and memory limits.
     *
     * @param milliCpus   CPU in thousandths of a core ({@code "2"} = 2000, {@code "500m"} = 500), empty for none
     * @param memoryBytes memory in bytes ({@code "4Gi"}), empty for none
     */
    public record ResourceLimits(Optional<Long> milliCpus, Optional<Long> memoryBytes) {
        public static final ResourceLimits NONE = new ResourceLimits(Optional.empty(), Optional.empty());
    }
}
