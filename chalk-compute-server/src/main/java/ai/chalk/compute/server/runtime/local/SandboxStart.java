package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.egress.EgressEndpoint;
import ai.chalk.compute.server.egress.SandboxTrust;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.SandboxSpec;
import ai.chalk.compute.server.runtime.host.LayerQuota;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.host.SandboxHostname;
import ai.chalk.compute.server.runtime.local.LocalRuntime.Level;
import ai.chalk.compute.server.runtime.local.cgroup.SandboxCgroup;
import ai.chalk.compute.server.runtime.local.image.LocalImage;
import ai.chalk.compute.server.runtime.local.image.RootPaths;
import ai.chalk.compute.server.runtime.local.mount.MountOp;
import ai.chalk.compute.server.runtime.local.mount.MountPlan;
import ai.chalk.compute.server.runtime.network.ProxyLinks;
import ai.chalk.compute.server.runtime.userns.IdRange;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The start of one local sandbox, up to its running init: the spec resolved against its image and checked; then its
 * state directory, layer quota, device nodes, user namespace and id-mapped volumes; its {@link SandboxMounts mount
 * plan}, checked before anything is made inside the root; its root; its cgroups; its init and its way out. When a
 * step fails, everything made so far is undone.
 */
final class SandboxStart {

    private static final Logger log = LoggerFactory.getLogger(SandboxStart.class);

    /** Starts of one sandbox, when the host's {@code /etc} keeps changing under them. */
    private static final int MAX_ATTEMPTS = 5;

    /**
     * A started sandbox's parts, for {@link LocalSandbox}.
     *
     * @param hostWorkdir the working directory on the host, for sandboxes without isolation; else null
     * @param entrypoint  what to start in it first; empty for nothing
     */
    record Started(
            Path dir,
            String workdir,
            Path hostWorkdir,
            Map<String, String> env,
            boolean fromImage,
            SandboxCgroup groups,
            SandboxInit init,
            List<String> entrypoint) {

        /** Names the environment's variables without their values, which may be secrets. */
        @Override
        public String toString() {
            return "Started[dir=" + dir + ", workdir=" + workdir + ", env=" + env.keySet() + ", fromImage=" + fromImage
                    + ", entrypoint=" + entrypoint + "]";
        }
    }

    private final LocalRuntime runtime;
    private final SandboxSpec spec;
    private final String id;
    private final Level level;
    private final Path dir;
    private final Path layer;
    private final Map<String, String> env = new LinkedHashMap<>();
    private String workdir;
    private String imageRef = "";
    private LocalImage image;
    private List<String> entrypoint;
    /** The host's view as it is now (a walk of /etc), once per create; null for an image sandbox. */
    private SandboxFiles.SystemView view;
    // made so far, undone on failure
    private SandboxCgroup groups;
    private SandboxInit init = SandboxInit.NONE;
    private Optional<UserNamespace> userns = Optional.empty();
    /** The sandbox's link to the egress proxy when it has a network policy; attached once its init runs. */
    private ProxyLinks.Link link;

    /**
     * What a sandbox's spec resolves to against its image and this host, before anything is made: the parts of a
     * sandbox that are not bound when its init starts (its environment, entrypoint) and what its init is started
     * from (workdir, image, the host's view), by which a pre-started sandbox is told fit or stale.
     *
     * @param image the image's layers and configuration; null for the host's system view
     * @param view  the host's system view as it is now; null for an image sandbox
     */
    record Resolved(
            String workdir,
            Map<String, String> env,
            List<String> entrypoint,
            @Nullable LocalImage image,
            SandboxFiles.@Nullable SystemView view) {

        /** Names the environment's variables without their values, which may be secrets. */
        @Override
        public String toString() {
            return "Resolved[workdir=" + workdir + ", env=" + env.keySet() + ", entrypoint=" + entrypoint + "]";
        }
    }

    private final String hostname;

    private SandboxStart(LocalRuntime runtime, SandboxSpec spec, String name, String hostname) {
        this.runtime = runtime;
        this.spec = spec;
        this.id = name;
        this.hostname = hostname;
        this.level = runtime.level();
        this.dir = runtime.sandboxesDir().resolve(name);
        this.layer = dir.resolve("root");
        this.entrypoint = spec.entrypoint();
    }

    /** Starts the sandbox {@code spec} describes; returns once its init is ready. */
    static Started start(LocalRuntime runtime, SandboxSpec spec) throws RuntimeStartException {
        return startAs(runtime, spec, spec.id(), SandboxHostname.of(spec.id())).started();
    }

    /** A started sandbox with what its spec resolved to. */
    record Prepared(Resolved resolved, Started started) {}

    /**
     * Starts the sandbox {@code spec} describes under another name than its id: its state directory and cgroups are
     * named {@code name}, its host {@code hostname} (a pre-started sandbox, see {@link SandboxPool}).
     */
    static Prepared startAs(LocalRuntime runtime, SandboxSpec spec, String name, String hostname)
            throws RuntimeStartException {
        RuntimeStartException first = null;
        for (int attempt = 1; ; attempt++) {
            SandboxStart start = new SandboxStart(runtime, spec, name, hostname);
            start.resolve();
            try {
                Started started = start.setUp();
                return new Prepared(start.resolvedParts(), started);
            } catch (RuntimeStartException e) {
                if (first == null) {
                    first = e;
                } else if (e != first) {
                    first.addSuppressed(e);
                }
                // a root-only file under the host's /etc removed while the sandbox started leaves its mask without a
                // mount point, and bubblewrap (or mount) fails the whole start on it: start again with the view as it
                // is now; once even when it looks unchanged (the file may be back by now, as a package manager's or
                // an editor's replacing write makes it; CI127 failed so), then only when it changed, so that a failure
                // that merely names a masked path costs two starts, not five; any other failure is the caller's at once
                if (attempt == MAX_ATTEMPTS
                        || !aMaskWentAway(start.view, e)
                        || (attempt > 1 && start.view.equals(runtime.systemView()))) {
                    throw first;
                }
                log.debug("Starting sandbox {} again: the host's /etc changed while it started ({})", name, e);
            }
        }
    }

    /** Whether {@code failure} names a path {@code view} masked (bubblewrap and mount name the mount point). */
    private static boolean aMaskWentAway(SandboxFiles.@Nullable SystemView view, RuntimeStartException failure) {
        String message = String.valueOf(failure.getMessage());
        return view != null
                && java.util.stream.Stream.concat(view.maskedFiles().stream(), view.maskedDirs().stream())
                        .anyMatch(message::contains);
    }

    /** What {@code spec} resolves to now, without starting anything; refuses what cannot start here. */
    static Resolved resolve(LocalRuntime runtime, SandboxSpec spec) throws RuntimeStartException {
        SandboxStart start = new SandboxStart(runtime, spec, spec.id(), "");
        start.resolve();
        return start.resolvedParts();
    }

    private Resolved resolvedParts() {
        return new Resolved(workdir, Map.copyOf(env), List.copyOf(entrypoint), image, view);
    }

    /** The workdir, environment and entrypoint, from the spec and its image; refuses what cannot start here. */
    private void resolve() throws RuntimeStartException {
        workdir = spec.workdir(); // the spec holds its id, workdir and environment well-formed
        env.put("PATH", LocalRuntime.DEFAULT_PATH);
        env.put("HOME", "/root");
        imageRef = spec.image().isEmpty() ? runtime.defaultImage().orElse("") : spec.image();
        if (!imageRef.isEmpty()) {
            image = runtime.image(imageRef);
            if (!image.config().runsAsRoot()) {
                throw new RuntimeStartException("image " + imageRef + " runs as user \""
                        + image.config().user()
                        + "\"; the local runtime runs sandbox processes as root (without capabilities) only: build"
                        + " the image without USER, or use the docker runtime");
            }
            if (!image.config().workingDir().isBlank()) {
                workdir = LocalSandbox.normalize(image.config().workingDir());
                if (!workdir.startsWith("/")) {
                    workdir = LocalSandbox.normalize("/" + workdir);
                }
            }
            env.putAll(image.config().envMap());
            if (entrypoint.isEmpty()) {
                entrypoint = image.config().startCommand();
            }
        }
        env.putAll(spec.env());
        view = image != null ? null : runtime.systemView();
        if (spec.network() && level.isolated() && runtime.networkProblem().isPresent()) {
            throw new RuntimeStartException(runtime.networkProblem().get());
        }
        if (spec.egress().isPresent() && !level.isolated()) {
            throw new RuntimeStartException("a network policy needs a network namespace of the sandbox's own, and this"
                    + " server runs sandboxes as plain processes (isolation none): install bubblewrap, or create the"
                    + " sandbox without a network policy");
        }
        if (level.isolated()
                && (image != null
                                ? SandboxCommands.Helpers.image(runtime.sandboxTools())
                                : SandboxCommands.Helpers.host(runtime.tools()))
                        .perl()
                        .isEmpty()) {
            throw new RuntimeStartException("sandbox processes run under a syscall filter that perl installs, and"
                    + " this host has no perl under its system directories (apt-get install perl-base)");
        }
        if (!spec.volumes().isEmpty() && !level.isolated()) {
            throw new RuntimeStartException("volumes need a mount namespace, and this server runs sandboxes as plain"
                    + " processes (isolation none): install bubblewrap, or create the sandbox without volumes");
        }
    }

    private Started setUp() throws RuntimeStartException {
        Path hostWorkdir = null;
        try {
            if (spec.egress().isPresent()) {
                reserveLink();
            }
            List<SandboxSpec.VolumeBinding> volumes = level.isolated() ? hostSide() : spec.volumes();
            // the sandbox's root as its processes see it: its layer id-mapped (an image root's overlay is made of
            // id-mapped layers already)
            Path root = userns.isPresent() && image == null ? dir.resolve("mapped") : layer;
            MountPlan mounts = level.isolated() ? mountPlan(root, volumes) : null;
            List<String> volumePaths = mounts == null
                    ? List.of()
                    : mounts.ops().stream()
                            .filter(op -> op instanceof MountOp.Volume)
                            .map(MountOp::target)
                            .toList();
            if (image != null) {
                prepareImageRoot(volumePaths);
            } else {
                prepareLayer(volumePaths);
            }
            createGroups();
            Optional<IdRange> ids = init.ids();
            if (level.isolated()) {
                init = InitLauncher.of(level)
                        .launch(new InitLauncher.Request(
                                runtime, groups, hostname, workdir, image != null, mounts, userns, dir))
                        .withIds(ids);
                if (level == Level.BUBBLEWRAP) {
                    SandboxDevices.unmountPtys(dir.resolve("pts")); // the init has it now
                }
                if (!root.equals(layer)) {
                    // the init's mount namespace holds its own copy of the id-mapped root now; the host's goes, so
                    // that the host's mount table, which every later sandbox's start copies and bubblewrap reads once
                    // per mount it makes, grows by one mount per sandbox (its layer's), not two
                    LayerQuota.unmount(root);
                }
            } else {
                hostWorkdir = layer.resolve(workdir.substring(1));
                Files.createDirectories(hostWorkdir);
                env.put("HOME", hostWorkdir.toString());
            }
            if (spec.network() && level.isolated()) {
                init = init.withEgress(runtime.attachNetwork(dir, init.pid(), groups)::close);
            }
            if (link != null) {
                init = init.withEgress(runtime.egress()
                        .attach(link, init.pid(), id, spec.egress().get()));
            }
            // the init has joined the namespace, which now lives as long as the sandbox: its holder can go (after
            // the create has returned)
            userns.ifPresent(ns -> CompletableFuture.delayedExecutor(100, TimeUnit.MILLISECONDS, runtime.helpers())
                    .execute(ns::close));
        } catch (RuntimeStartException | IOException | RuntimeException e) {
            undo();
            if (e instanceof RuntimeStartException rse) {
                throw rse;
            }
            if (e instanceof ComputeException ce) {
                throw ce; // a refusal (a volume over the runtime's paths ...) in the caller's words
            }
            throw new RuntimeStartException("cannot start sandbox " + id + ": " + e.getMessage(), e);
        }
        return new Started(dir, workdir, hostWorkdir, Map.copyOf(env), image != null, groups, init, entrypoint);
    }

    /**
     * The host side of an isolated sandbox: its state directory with the layer's quota, its user namespace (which
     * decides who owns its {@code /dev}), its device nodes, with bubblewrap its terminals, {@code /dev} and
     * {@code shm} directories and the empty directories of its masks ({@link EmptyDirs}); returns its volumes as it
     * sees them.
     */
    private List<SandboxSpec.VolumeBinding> hostSide() throws RuntimeStartException {
        try {
            Files.createDirectories(dir);
            LayerQuota.mount(dir, runtime.defaults().layerBytes());
            userns = runtime.newUserNamespace();
            init = init.withIds(userns.map(UserNamespace::range));
            SandboxDevices.create(dir.resolve("dev"), devOwner());
            if (level == Level.BUBBLEWRAP) {
                SandboxDevices.mountPtys(dir.resolve("pts"), devOwner());
                SandboxDevices.makeDev(dir.resolve(SandboxDevices.DEV), devOwner());
                EmptyDirs.create(dir);
                SandboxDevices.makeShm(
                        dir.resolve(SandboxDevices.SHM),
                        userns.map(ns -> OptionalLong.of(ns.range().first())).orElse(OptionalLong.empty()));
            }
            List<SandboxSpec.VolumeBinding> volumes = new ArrayList<>(spec.volumes());
            if (link != null) {
                volumes.add(new SandboxSpec.VolumeBinding(runtime.egress().trustDir(), SandboxTrust.MOUNT, true));
            }
            return userns.isPresent() ? idMapped(volumes, userns.get()) : volumes;
        } catch (IOException e) {
            throw new RuntimeStartException(
                    "cannot set up the file system of sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /**
     * Reserves the sandbox's link to the egress proxy and puts the proxy's variables in its environment (over any of
     * the spec's: a sandbox cannot point them elsewhere, there is nothing else to reach).
     */
    private void reserveLink() throws RuntimeStartException {
        link = runtime.egress().reserve();
        Map<String, String> proxyEnv = EgressEndpoint.sandboxEnv(link.hostAddress());
        String javaOptions = env.get("JAVA_TOOL_OPTIONS");
        env.putAll(proxyEnv);
        if (javaOptions != null && !javaOptions.isBlank()) {
            env.put("JAVA_TOOL_OPTIONS", proxyEnv.get("JAVA_TOOL_OPTIONS") + " " + javaOptions);
        }
    }

    /** The resolver configuration of a sandbox with a policy, in its state directory (outside its root). */
    private Path proxyResolvConf() throws IOException {
        Path resolv = dir.resolve("resolv.conf");
        Files.writeString(resolv, "nameserver " + link.hostAddress().getHostAddress() + "\noptions attempts:2\n");
        Files.setPosixFilePermissions(resolv, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        return resolv;
    }

    /** Who owns the sandbox's {@code /dev} and its nodes (see {@link SandboxDevices#OVERFLOW_ID}). */
    private int devOwner() {
        return userns.isPresent() ? 0 : SandboxDevices.OVERFLOW_ID;
    }

    private MountPlan mountPlan(Path root, List<SandboxSpec.VolumeBinding> volumes) throws IOException {
        Optional<Path> resolv = spec.network()
                ? Optional.of(runtime.resolvConf())
                : link != null ? Optional.of(proxyResolvConf()) : Optional.empty();
        SandboxMounts.Devices devices = new SandboxMounts.Devices(dir.resolve("dev"), dir.resolve("pts"), devOwner());
        return image != null
                ? SandboxMounts.image(
                        root, runtime.sandboxTools().dir(), volumes, resolv, runtime.procMasks(), devices, workdir)
                : SandboxMounts.hostView(root, view, volumes, resolv, runtime.procMasks(), devices, workdir);
    }

    /**
     * The sandbox's volumes as it sees them: each id-mapped to its ids at {@code <dir>/v/N}, so that owner 0 on disk
     * is its root, whichever sandbox wrote the file.
     */
    private List<SandboxSpec.VolumeBinding> idMapped(List<SandboxSpec.VolumeBinding> volumes, UserNamespace ns)
            throws IOException {
        List<SandboxSpec.VolumeBinding> mapped = new ArrayList<>();
        for (int i = 0; i < volumes.size(); i++) {
            SandboxSpec.VolumeBinding v = volumes.get(i);
            Path at = dir.resolve("v").resolve(Integer.toString(i));
            if (Files.isDirectory(v.source())) {
                Files.createDirectories(at);
            } else {
                Files.createDirectories(at.getParent());
                Files.createFile(at);
            }
            ns.attachIdMapped(v.source(), at);
            mapped.add(new SandboxSpec.VolumeBinding(at, v.mountPath(), v.readOnly()));
        }
        return mapped;
    }

    private void prepareImageRoot(List<String> volumePaths) throws RuntimeStartException {
        try {
            ImageRoot.mount(runtime.stateDir(), image, dir, spec.initialFilesystem(), userns);
            List<String> dirs = new ArrayList<>(ImageRoot.DIRS);
            dirs.add(workdir);
            dirs.addAll(volumePaths);
            if (level == Level.UNSHARE) {
                dirs.add("/.chalk-old-root");
            }
            // the resolver file is mounted over: a real file, whatever link the image had there
            List<String> files = (spec.network() || link != null) && level.isolated()
                    ? List.of(ImageRoot.PRELOAD, SandboxCommands.RESOLV_CONF)
                    : List.of(ImageRoot.PRELOAD);
            if (userns.isPresent()) {
                // through the overlay, as the sandbox's root: the server's root has no id in its mapping
                userns.get().asRoot(() -> {
                    RootPaths.prepare(layer, dirs, files);
                    return null;
                });
            } else {
                RootPaths.prepare(layer, dirs, files);
            }
        } catch (IOException e) {
            throw new RuntimeStartException(
                    "cannot set up the root filesystem of sandbox " + id + " from image " + imageRef + ": "
                            + e.getMessage(),
                    e);
        }
    }

    private void prepareLayer(List<String> volumePaths) throws RuntimeStartException {
        try {
            if (spec.initialFilesystem().isPresent()) {
                List<String> owned = new ArrayList<>(List.of("/tmp", "/var/tmp", "/root", workdir));
                owned.addAll(volumePaths);
                SandboxFiles.createLayer(layer, view, spec.initialFilesystem().get(), owned);
            } else {
                SandboxFiles.createLayer(layer, view);
            }
            if (userns.isPresent()) {
                mountPoints(volumePaths);
                Path mapped = dir.resolve("mapped");
                Files.createDirectories(mapped);
                userns.get().attachIdMapped(layer, mapped);
            }
        } catch (IOException e) {
            throw new RuntimeStartException(
                    "cannot create the writable layer of sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /**
     * Creates, on the host side of a layer with the host's system view, every directory the runtime mounts on or
     * creates while setting the sandbox up (system directories, {@code /proc}, {@code /tmp}, the workdir, volume mount
     * points), with the modes bubblewrap would give them: once the layer is id-mapped, the server's root can no
     * longer create anything in it.
     */
    private void mountPoints(List<String> volumePaths) throws IOException {
        Map<String, Integer> modes = Map.of("/tmp", 01777, "/var/tmp", 01777, "/root", 0700);
        List<String> fresh = modes.keySet().stream()
                .filter(d -> !Files.exists(layer.resolve(d.substring(1)), LinkOption.NOFOLLOW_LINKS))
                .toList();
        List<String> dirs = new ArrayList<>(view.readOnlyDirs());
        dirs.addAll(List.of("/proc", "/dev", "/tmp", "/var/tmp", "/root", workdir));
        dirs.addAll(volumePaths);
        if (level == Level.UNSHARE) {
            dirs.add("/.chalk-old-root");
        }
        RootPaths.prepare(layer, dirs, List.of());
        for (String d : fresh) {
            Files.setAttribute(
                    layer.resolve(d.substring(1)),
                    "unix:mode",
                    modes.get(d),
                    LinkOption.NOFOLLOW_LINKS); // with the sticky bit, which PosixFilePermission lacks
        }
    }

    private void createGroups() throws RuntimeStartException {
        if (!runtime.cgroups().any()) {
            return;
        }
        try {
            SandboxDefaults d = runtime.defaults();
            SandboxSpec.ResourceLimits limits = new SandboxSpec.ResourceLimits(
                    spec.limits().milliCpus(),
                    Optional.of(spec.limits().memoryBytes().orElse(d.memoryBytes())));
            groups = runtime.cgroups().create(id, limits, d.pidsMax());
        } catch (IOException e) {
            throw new RuntimeStartException("cannot create the cgroups of sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /** Undoes whatever of the sandbox was made before a step failed. */
    private void undo() {
        userns.ifPresent(UserNamespace::close);
        if (init.egress() != null) {
            init.egress().close();
        }
        if (link != null) {
            link.close();
        }
        if (init.process() != null) {
            init.process().destroyForcibly();
            LocalSandbox.waitQuietly(init.process(), 10);
        }
        if (groups != null) {
            groups.remove();
        }
        try {
            ImageRoot.unmount(dir);
            LayerQuota.unmount(dir);
            NoFollowDelete.delete(dir);
        } catch (IOException ex) {
            log.warn("Cannot remove the layer of failed sandbox {}: {}", id, ex.toString());
        }
        init.ids().ifPresent(runtime::releaseIds);
    }
}
