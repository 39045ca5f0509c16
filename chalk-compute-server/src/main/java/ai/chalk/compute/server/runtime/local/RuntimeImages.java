package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.host.HostTools;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.SandboxTools;
import ai.chalk.compute.server.runtime.local.cgroup.CgroupDriver;
import ai.chalk.compute.server.runtime.local.image.BuildTools;
import ai.chalk.compute.server.runtime.local.image.ImageSourceException;
import ai.chalk.compute.server.runtime.local.image.LocalImage;
import ai.chalk.compute.server.runtime.local.image.LocalImageBuilder;
import ai.chalk.compute.server.runtime.local.image.LocalImages;
import ai.chalk.compute.server.runtime.local.mount.BubblewrapMounts;
import ai.chalk.compute.server.runtime.userns.UserNamespacePool;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Images on a local runtime: the cache their layers are unpacked into ({@link LocalImages}), the image of sandboxes
 * created without one, and the builder of {@code chalk-local/} images, whose steps run in bubblewrap. Whether
 * sandboxes and builds can have images here follows from the runtime's isolation and its sandbox tools.
 */
final class RuntimeImages implements AutoCloseable {

    private final LocalRuntime.Level level;
    private final SandboxTools sandboxTools;
    private final LocalImages cache;
    private final Optional<String> defaultImage;
    private final LocalImageBuilder builder;

    /**
     * @param ociImportDir where {@code oci:} and {@code oci-archive:} images are looked up; null for
     *                     {@code <stateDir>/oci}
     * @param dockerHost   the Docker engine images are exported from; null for the default
     * @param cgroups      where build steps get cgroups of their own
     * @param procMasks    what of a build step's {@code /proc} is masked, as of a sandbox's
     * @param defaultImage the image of sandboxes created without one; null or blank for none
     */
    RuntimeImages(
            Path stateDir,
            LocalRuntime.Level level,
            HostTools tools,
            SandboxTools sandboxTools,
            UserNamespacePool userNamespaces,
            CgroupDriver cgroups,
            ProcMasks procMasks,
            @Nullable Path ociImportDir,
            @Nullable String dockerHost,
            @Nullable String defaultImage)
            throws IOException {
        this.level = level;
        this.sandboxTools = sandboxTools;
        this.cache = new LocalImages(
                stateDir.resolve("images"), ociImportDir != null ? ociImportDir : stateDir.resolve("oci"), dockerHost);
        this.defaultImage = Optional.ofNullable(defaultImage).filter(i -> !i.isBlank());
        String buildProblem = buildProblem();
        this.builder = new LocalImageBuilder(
                cache,
                stateDir,
                buildProblem == null
                        ? Optional.of(buildTools(stateDir, tools, userNamespaces, cgroups, procMasks))
                        : Optional.empty(),
                buildProblem);
    }

    private BuildTools buildTools(
            Path stateDir, HostTools tools, UserNamespacePool userNamespaces, CgroupDriver cgroups, ProcMasks procMasks)
            throws IOException {
        // the empty directory the steps' /proc masks bind, made afresh: only the server has ever written there
        Path masks = stateDir.resolve("build-masks");
        NoFollowDelete.delete(masks);
        Files.createDirectories(masks);
        EmptyDirs.create(masks);
        return new BuildTools(
                tools.require("bwrap"),
                sandboxTools.dir(),
                SandboxTools.MOUNT,
                sandboxTools.command("setpriv"),
                List.of(SandboxTools.busybox(), "nsenter"),
                List.of(SandboxTools.busybox(), "env"),
                userNamespaces,
                cgroups,
                BubblewrapMounts.render(SandboxMounts.proc(procMasks, EmptyDirs.in(masks, EmptyDirs.READABLE))));
    }

    private @Nullable String buildProblem() {
        if (level != LocalRuntime.Level.BUBBLEWRAP) {
            return "image builds run in bubblewrap, and this server's isolation is " + level.label
                    + (level == LocalRuntime.Level.NONE ? "" : " (bubblewrap is missing or does not work here)");
        }
        if (sandboxTools.problem().isPresent()) {
            return sandboxTools.problem().get();
        }
        if (!busyboxHasNsenter()) {
            return "image build steps join their user namespace with busybox's nsenter, and the host's static busybox"
                    + " has no such applet";
        }
        return null;
    }

    /** Whether the static busybox the helpers hold has the {@code nsenter} applet (Debian's has). */
    private boolean busyboxHasNsenter() {
        try {
            Process p = new ProcessBuilder(
                            sandboxTools.dir().resolve("bin/busybox").toString(), "--list")
                    .redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
            String applets = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            return p.waitFor() == 0 && applets.lines().anyMatch("nsenter"::equals);
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The image of sandboxes created without one; empty when they see the host's system directories instead. */
    Optional<String> defaultImage() {
        return defaultImage;
    }

    /** Builds image specs as cached layers on this host. */
    /** Where image work in progress (unpacks, build steps and their mounts) goes. */
    Path workInProgress() {
        return cache.tmp();
    }

    LocalImageBuilder builder() {
        return builder;
    }

    /**
     * The layers and configuration of image {@code ref}, unpacked into the cache if needed.
     *
     * @throws RuntimeStartException when sandboxes cannot run images here or the image cannot be had; the message
     *                               says what to do
     */
    LocalImage resolve(String ref) throws RuntimeStartException {
        if (level == LocalRuntime.Level.NONE) {
            throw new RuntimeStartException("image " + ref + ": this server runs sandboxes as plain processes"
                    + " (isolation none), which cannot have their own root filesystem; install bubblewrap and use"
                    + " isolation auto, or create the sandbox without an image");
        }
        if (sandboxTools.problem().isPresent()) {
            throw new RuntimeStartException(
                    "image " + ref + ": " + sandboxTools.problem().get());
        }
        try {
            return cache.resolve(ref);
        } catch (ImageSourceException e) {
            throw new RuntimeStartException(e.getMessage(), e);
        } catch (IOException e) {
            throw new RuntimeStartException("cannot unpack image " + ref + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        cache.close();
    }
}
