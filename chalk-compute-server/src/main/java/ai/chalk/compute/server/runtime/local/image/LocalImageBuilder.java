package ai.chalk.compute.server.runtime.local.image;

import ai.chalk.compute.proto.sandbox.v1.AddFileStep;
import ai.chalk.compute.proto.sandbox.v1.BuildStep;
import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.image.BuildLimits;
import ai.chalk.compute.server.image.BuildLog;
import ai.chalk.compute.server.image.ImageBuildException;
import ai.chalk.compute.server.image.ImageBuilder;
import ai.chalk.compute.server.runtime.host.DiskReserve;
import ai.chalk.compute.server.runtime.host.LayerQuota;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.SandboxDevices;
import ai.chalk.compute.server.runtime.userns.UserNamespace;
import ai.chalk.compute.server.runtime.userns.UserNamespacePool;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.UUID;

/**
 * Builds image specs for the local runtime as cached layers over the base image's root filesystem.
 *
 * <p>The spec's {@code workdir} and {@code env} apply first (steps run in them, as in the docker runtime's builds)
 * and go to the image's configuration with {@code entrypoint} and {@code cmd}. Each build step makes a layer: an
 * {@code add_file} writes its file, each command of {@code run_commands} and each {@code pip_install} runs with
 * {@code /bin/sh -c} in a build sandbox ({@link BuildStepRunner}) over an overlay of the layers below, whose upper
 * directory becomes the layer. A layer lives in {@code <images>/layers/<key>}, its key the hash of the key below
 * it and of the step (with the workdir and environment it runs in), so a build that changes step 3 reuses layers 1
 * and 2. A layer is renamed into place only once its step succeeded; a failed step leaves nothing behind and throws
 * an {@link ImageBuildException} with the step's index, kind, command, exit code and last output lines.
 *
 * <p>The image is recorded as {@code chalk-local/<content hash>} ({@link BuiltImages}), which local sandboxes start
 * from. {@code dockerfile_commands}, {@code uv_pip_install} and {@code uv_sync} are not built here.
 */
public final class LocalImageBuilder implements ImageBuilder {

    /** How long one build command may run unless set otherwise. */
    public static final Duration DEFAULT_STEP_TIMEOUT = Duration.ofMinutes(30);
    /** The least a build step must leave free of the disk that holds the image cache by default. */
    public static final long DISK_RESERVE_MIN_BYTES = DiskReserve.MIN_BYTES;

    private final LocalImages images;
    private final Path base;
    private final Optional<BuildStepRunner> runner;
    /** Where a step's user namespace comes from; empty when steps cannot run here. */
    private final Optional<UserNamespacePool> users;

    /** The most a build step's {@code /dev} holds, {@code /dev/shm} included: Docker's {@code shm} size. */
    static final long DEV_BYTES = 64L << 20;

    private final String unavailable;
    private final Path layersDir;
    private final KeyLocks locks = new KeyLocks();
    private volatile Duration stepTimeout = DEFAULT_STEP_TIMEOUT;
    private volatile BuildLimits stepLimits = BuildLimits.DEFAULTS;
    /** Set by {@link #stepDiskReserve}; -1 for the default. */
    private volatile long stepDiskReserve = -1;

    /**
     * @param images      the image cache (bases, layers, records)
     * @param base        the runtime's state directory, which holds the cache (overlay paths are relative to it)
     * @param tools       what build commands run with; empty when builds cannot run here
     * @param unavailable why builds cannot run here when {@code tools} is empty
     */
    public LocalImageBuilder(LocalImages images, Path base, Optional<BuildTools> tools, String unavailable)
            throws IOException {
        this.images = images;
        this.base = base;
        this.users = tools.map(BuildTools::users);
        this.runner = tools.isEmpty()
                ? Optional.empty()
                : Optional.of(new BuildStepRunner(
                        tools.get(),
                        BuildNetwork.onThisHost(base.resolve("build-network")),
                        base.resolve("seccomp-build.bpf")));
        this.unavailable = unavailable;
        this.layersDir = images.dir().resolve("layers");
        Files.createDirectories(layersDir);
    }

    /** Sets how long one build command may run. */
    public void stepTimeout(Duration timeout) {
        this.stepTimeout = timeout;
    }

    /** Sets what one build command may use (memory, CPU, open files, processes); {@link BuildLimits#DEFAULTS} unless set. */
    public void stepLimits(BuildLimits limits) {
        this.stepLimits = java.util.Objects.requireNonNull(limits, "limits");
    }

    /**
     * Sets how much of the disk that holds the image cache a build step must leave free: a step that writes until less
     * is left is stopped. By default {@value #DISK_RESERVE_MIN_BYTES} bytes or a fiftieth of the disk, whichever is
     * more.
     */
    public void stepDiskReserve(long bytes) {
        this.stepDiskReserve = bytes;
    }

    private BuildStepRunner.Bounds bounds(Path work) throws IOException {
        long reserve = stepDiskReserve;
        if (reserve < 0) {
            reserve = DiskReserve.of(work);
        }
        return new BuildStepRunner.Bounds(stepTimeout, stepLimits, reserve);
    }

    /** Kills every build step running now (they fail), for a runtime that closes. */
    public void stopSteps() {
        runner.ifPresent(BuildStepRunner::stopAll);
    }

    /**
     * Whether {@code groupId} names the cgroup of a build step running now: a runtime cleaning up the groups an earlier
     * server left must leave it alone.
     */
    public boolean runsStep(String groupId) {
        return runner.isPresent() && runner.get().runs(groupId);
    }

    @Override
    public void check(ImageSpec spec) {
        if (runner.isEmpty()) {
            throw ComputeException.refused("the local runtime cannot build images here: " + unavailable
                    + "; use the docker runtime to build image specs");
        }
        if (spec.getBaseImage().isBlank()) {
            throw ComputeException.invalid("image_spec.base_image is empty: name the image to build" + " on");
        }
        for (String key : spec.getEnvMap().keySet()) {
            if (key.isEmpty() || key.contains("=") || key.indexOf('\0') >= 0) {
                throw ComputeException.invalid("image_spec.env: invalid variable name \"" + key + "\"");
            }
        }
        if (spec.hasWorkdir() && !spec.getWorkdir().isEmpty() && badPath(spec.getWorkdir())) {
            throw ComputeException.invalid(
                    "image_spec.workdir \"" + spec.getWorkdir() + "\" must be a path without \"..\"");
        }
        List<BuildStep> steps = spec.getStepsList();
        for (int i = 0; i < steps.size(); i++) {
            BuildStep step = steps.get(i);
            String kind = kind(step);
            switch (step.getStepCase()) {
                case DOCKERFILE_COMMANDS, UV_PIP_INSTALL, UV_SYNC ->
                    throw ComputeException.refused("image_spec.steps[" + i + "] (" + kind
                            + ") cannot be built by the local runtime, which builds"
                            + " run_commands, pip_install and add_file steps; the docker runtime builds it");
                case STEP_NOT_SET -> throw ComputeException.invalid("image_spec.steps[" + i + "] names no step");
                case ADD_FILE -> {
                    String d = step.getAddFile().getDestination();
                    if (d.isBlank() || d.endsWith("/") || badPath(d)) {
                        throw ComputeException.invalid("image_spec.steps[" + i + "] (add_file):" + " destination \"" + d
                                + "\" must name a file, without \"..\"");
                    }
                }
                default -> {}
            }
        }
    }

    @Override
    public String build(ImageSpec spec, String contentHash, BuildLog log)
            throws ImageBuildException, InterruptedException {
        check(spec);
        if (!contentHash.matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException("the content hash must be 64 hex digits: " + contentHash);
        }
        LocalImage baseImage;
        try {
            baseImage = images.resolve(spec.getBaseImage());
        } catch (IOException e) {
            throw new ImageBuildException("base image " + spec.getBaseImage() + ": " + e.getMessage(), e);
        }
        ImageConfig config = baseImage.config().withEnv(spec.getEnvMap());
        if (spec.hasWorkdir() && !spec.getWorkdir().isEmpty()) {
            config = config.withWorkingDir(absolute("/", spec.getWorkdir()));
        }
        String workdir = config.workingDir().isEmpty() ? "/" : absolute("/", config.workingDir());
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        env.put("HOME", "/root");
        env.putAll(config.envMap());
        List<Path> layers = new ArrayList<>(baseImage.layers());
        StringBuilder baseId = new StringBuilder("base");
        layers.forEach(l -> baseId.append('\n').append(images.dir().relativize(l)));
        String key = ImageManifest.sha256(baseId.toString().getBytes(StandardCharsets.UTF_8));
        List<Step> plan = plan(spec, workdir, env);
        for (int i = 0; i < plan.size(); i++) {
            Step step = plan.get(i);
            key = ImageManifest.sha256((key + "\n" + step.identity()).getBytes(StandardCharsets.UTF_8));
            String head = "Step " + (i + 1) + "/" + plan.size() + " (image_spec.steps[" + step.index() + "] "
                    + step.kind() + "): " + step.summary().lines().findFirst().orElse("");
            layers.add(layer(key, layers, step, workdir, env, head, log));
        }
        try {
            images.built().record(contentHash, layers, config.withStart(spec.getEntrypointList(), spec.getCmdList()));
        } catch (IOException e) {
            throw new ImageBuildException("cannot record the built image: " + e.getMessage(), e);
        }
        log.line("Built image " + BuiltImages.ref(contentHash) + " (" + plan.size() + " steps)");
        return BuiltImages.ref(contentHash);
    }

    @Override
    public boolean exists(String imageRef) {
        try {
            return images.builtAndPresent(imageRef);
        } catch (IOException e) {
            return false;
        }
    }

    /** One layer to make: a command to run, or a file to add. */
    private record Step(int index, String kind, String command, String context, AddFileStep file, String destination) {

        /**
         * What the step's layer is made from, in words no other step's can spell: the layer cache is shared by every
         * environment, so two steps with one identity would share one layer, and one tenant's build could put its
         * layer in another's image.
         */
        String identity() {
            return file == null
                    ? unambiguous(List.of(kind, command, context))
                    : unambiguous(List.of(
                            kind,
                            destination,
                            Integer.toString(mode()),
                            ImageManifest.sha256(file.getContent().toByteArray())));
        }

        String summary() {
            return file == null
                    ? command
                    : destination + " (mode " + Integer.toOctalString(mode()) + ", "
                            + file.getContent().size() + " bytes)";
        }

        int mode() {
            return file.hasMode() ? file.getMode() & 07777 : 0644;
        }
    }

    private static List<Step> plan(ImageSpec spec, String workdir, Map<String, String> env) {
        // a command's layer depends on the directory and environment it ran in; spelt without the map's own text,
        // in which {A=1, B=2} and {A="1, B=2"} read alike
        List<String> context = new ArrayList<>(List.of("workdir", workdir, "env"));
        new TreeMap<>(env).forEach((name, value) -> {
            context.add(name);
            context.add(value);
        });
        String contextText = unambiguous(context);
        List<Step> plan = new ArrayList<>();
        List<BuildStep> steps = spec.getStepsList();
        for (int i = 0; i < steps.size(); i++) {
            BuildStep s = steps.get(i);
            switch (s.getStepCase()) {
                case RUN_COMMANDS -> {
                    for (String c : s.getRunCommands().getCommandsList()) {
                        plan.add(new Step(i, "run_commands", c, contextText, null, null));
                    }
                }
                case PIP_INSTALL -> {
                    StringBuilder c =
                            new StringBuilder("PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir");
                    s.getPipInstall()
                            .getPackagesList()
                            .forEach(p -> c.append(' ').append(quote(p)));
                    plan.add(new Step(i, "pip_install", c.toString(), contextText, null, null));
                }
                case ADD_FILE ->
                    plan.add(new Step(
                            i,
                            "add_file",
                            null,
                            null,
                            s.getAddFile(),
                            absolute(workdir, s.getAddFile().getDestination())));
                default -> throw new IllegalStateException("unchecked step " + s.getStepCase());
            }
        }
        return plan;
    }

    /** {@code parts} each after its length, so that no other list of parts reads the same. */
    static String unambiguous(List<String> parts) {
        StringBuilder b = new StringBuilder();
        for (String part : parts) {
            b.append(part.length()).append(':').append(part).append('\n');
        }
        return b.toString();
    }

    /** The layer of {@code step} over {@code below}: from the cache, else made now. */
    private Path layer(
            String key, List<Path> below, Step step, String workdir, Map<String, String> env, String head, BuildLog log)
            throws ImageBuildException, InterruptedException {
        Path layer = layersDir.resolve(key);
        synchronized (locks.of(key)) {
            if (Files.isDirectory(layer, LinkOption.NOFOLLOW_LINKS)) {
                log.line(head);
                log.line(" ---> cached layer " + key.substring(0, 12));
                return layer;
            }
            log.line(head);
            Path work = images.tmp().resolve("layer-" + key + "-" + UUID.randomUUID());
            Path upper = work.resolve("fs");
            Path root = work.resolve("root");
            boolean mounted = false;
            // a command step runs as an id range of its own, as a sandbox does; a file step is written as its root
            Optional<UserNamespace> userns = Optional.empty();
            try {
                Files.createDirectories(upper);
                Files.createDirectories(work.resolve("work"));
                Files.createDirectories(root);
                userns = users.isPresent() ? users.get().create() : Optional.empty();
                if (userns.isPresent()) {
                    mountIdMapped(userns.get(), below, work, root);
                } else {
                    OverlayMount.mount(base, below, upper, work.resolve("work"), root, false);
                }
                mounted = true;
                if (step.file() != null) {
                    asRootOf(userns, () -> addFile(root, step));
                } else {
                    runCommand(root, step, workdir, env, log, userns);
                }
                OverlayMount.unmountAllUnder(work);
                mounted = false;
                Files.move(upper, layer, StandardCopyOption.ATOMIC_MOVE);
                log.line(" ---> layer " + key.substring(0, 12));
                return layer;
            } catch (IOException e) {
                throw new ImageBuildException(
                        "image_spec.steps[" + step.index() + "] (" + step.kind() + ") "
                                + step.summary().lines().findFirst().orElse("") + ": " + e.getMessage(),
                        e);
            } finally {
                cleanUp(work);
                userns.ifPresent(ns -> {
                    ns.close();
                    users.get().release(ns.range());
                });
            }
        }
    }

    private void runCommand(
            Path root, Step step, String workdir, Map<String, String> env, BuildLog log, Optional<UserNamespace> userns)
            throws IOException, InterruptedException, ImageBuildException {
        String command = step.command();
        asRootOf(
                userns,
                () -> RootPaths.prepare(
                        root,
                        List.of("/proc", "/dev", "/etc", "/tmp", "/.chalk", workdir),
                        List.of("/etc/resolv.conf")));
        // a devpts with a limit, as a sandbox's: the step could otherwise hold every terminal of the host while it
        // runs;
        // unmounted with the step's other mounts
        Path ptys = root.resolveSibling("pts");
        SandboxDevices.mountPtys(ptys);
        // and a /dev of its own, as a sandbox's: device nodes made for it, the standard links and shm, on a small file
        // system of the step's, unmounted with its other mounts (the state directory's disk may be nodev, and
        // bubblewrap's --dev tmpfs, which bound the host's nodes, had no size)
        Path devFs = root.resolveSibling("devfs");
        Files.createDirectory(devFs);
        LayerQuota.mount(devFs, DEV_BYTES);
        SandboxDevices.create(devFs.resolve(BuildStepRunner.NODES), 0);
        SandboxDevices.makeDev(devFs.resolve(SandboxDevices.DEV), 0);
        SandboxDevices.makeShm(
                devFs.resolve(SandboxDevices.SHM),
                userns.map(ns -> OptionalLong.of(ns.range().first())).orElse(OptionalLong.empty()));
        BuildStepRunner.Outcome o = runner.orElseThrow()
                .run(root, devFs, ptys, workdir, env, command, bounds(root.getParent()), log, userns);
        if (o.stopped() != null || o.exitCode() != 0) {
            String why = o.stopped() != null ? o.stopped() : "failed with exit code " + o.exitCode();
            throw new ImageBuildException("image_spec.steps[" + step.index() + "] (" + step.kind() + ") `" + command
                    + "` " + why
                    + (o.tail().isEmpty()
                            ? " and printed nothing"
                            : "; its last output:\n" + String.join("\n", o.tail()))
                    + runner.get()
                            .networkProblem()
                            .map(p -> "\n(build steps have no network here: " + p + ")")
                            .orElse(""));
        }
    }

    /** Writes the file through the overlay, parents created as {@code mkdir -p} inside the image would. */
    private static void addFile(Path root, Step step) throws IOException {
        Path dest = Path.of(step.destination());
        Path dir = RootPaths.createDirectories(
                root, dest.getParent() == null ? "/" : dest.getParent().toString());
        Path file = dir.resolve(dest.getFileName().toString());
        if (Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("the destination " + step.destination() + " is a directory in the image");
        }
        if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            NoFollowDelete.delete(file); // a link there is replaced, never written through
        }
        try (OutputStream out = Files.newOutputStream(
                file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            step.file().getContent().writeTo(out);
        }
        Files.setAttribute(file, "unix:mode", step.mode(), LinkOption.NOFOLLOW_LINKS);
    }

    /** Work on the step's root: as its user namespace's root when it has one (see UserNamespace#asRoot). */
    private interface RootWork {
        void run() throws IOException;
    }

    private static void asRootOf(Optional<UserNamespace> userns, RootWork work) throws IOException {
        if (userns.isEmpty()) {
            work.run();
            return;
        }
        userns.get().asRoot(() -> {
            work.run();
            return null;
        });
    }

    /**
     * The step's overlay seen through its user namespace: the layers below at {@code work/l/N} and {@code work} itself
     * (upper {@code fs} and overlay work dir) at {@code work/m}, id-mapped, so that the layer keeps plain owners.
     */
    private static void mountIdMapped(UserNamespace userns, List<Path> below, Path work, Path root) throws IOException {
        Files.createDirectories(work.resolve("m"));
        userns.attachIdMapped(work, work.resolve("m"));
        List<String> lowers = new ArrayList<>();
        for (int i = 0; i < below.size(); i++) {
            Path at = Files.createDirectories(work.resolve("l").resolve(Integer.toString(i)));
            userns.attachIdMapped(below.get(i), at);
            lowers.add("l/" + i);
        }
        userns.mountOverlay(work, lowers, "m/fs", "m/work", root);
    }

    private static void cleanUp(Path work) {
        try {
            // the id-mapped views of the layers below are on the same file system: a delete must never enter them
            OverlayMount.unmountAllUnder(work);
            if (!OverlayMount.mountsUnder(work).isEmpty()) {
                throw new IOException("still mounted below it: " + OverlayMount.mountsUnder(work));
            }
            NoFollowDelete.delete(work);
        } catch (IOException e) {
            org.slf4j.LoggerFactory.getLogger(LocalImageBuilder.class)
                    .warn("Cannot clean up the build directory {}: {}", work, e.toString());
        }
    }

    static String kind(BuildStep step) {
        return step.getStepCase().name().toLowerCase(Locale.ROOT);
    }

    private static boolean badPath(String p) {
        return p.indexOf('\0') >= 0 || List.of(p.split("/")).contains("..");
    }

    /** {@code path} made absolute against {@code dir} and normalized. */
    static String absolute(String dir, String path) {
        String p = path.startsWith("/") ? path : dir + "/" + path;
        String n = Path.of(p).normalize().toString();
        return n.isEmpty() ? "/" : n;
    }

    /** Single-quotes {@code s} for {@code /bin/sh}. */
    static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
