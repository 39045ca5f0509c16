package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.SandboxSpec.VolumeBinding;
import ai.chalk.compute.server.runtime.host.Procfs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Volumes as the engine mounts them: {@code nosuid,nodev}. The Engine API has no such option for a bind mount, but a
 * bind mount inherits the flags of the mount it copies: so each volume is first bound here, under this runtime's
 * state directory ({@code volumes/<sandbox>/<n>}), remounted {@code nosuid,nodev} (and {@code ro} for a read-only
 * binding: runc's own read-only remount would drop the other two), made private (nothing mounted under it travels
 * back to the volume's mount), and that path is what the container binds. So a setuid-root file a sandbox plants in
 * a volume is never setuid in any container, and a device node planted there never opens.
 *
 * <p>Needs root and the engine in this process's mount namespace (its {@code dockerd} is looked for in this host's
 * {@code /proc}); elsewhere volumes are bound as they are, which {@link #problem()} says.
 */
final class VolumeMounts {

    private final Path root;
    private final String problem;

    private VolumeMounts(Path root, String problem) {
        this.root = root;
        this.problem = problem;
    }

    /** The staging area under {@code stateDir}, if volumes can be staged on this host. */
    static VolumeMounts under(Path stateDir, boolean engineOnThisHost) {
        Path root = stateDir.resolve("volumes");
        if (!engineOnThisHost) {
            return new VolumeMounts(root, "the Docker engine runs on another machine");
        }
        String status =
                Optional.ofNullable(Procfs.read(Path.of("/proc/self/status"))).orElse("");
        if (!status.lines().anyMatch(l -> l.matches("Uid:\\s+\\d+\\s+0\\s.*"))) {
            return new VolumeMounts(root, "the server does not run as root, which mounting needs");
        }
        Optional<String> ours = mountNamespace(Procfs.SELF);
        Optional<Long> dockerd = Procfs.allPids().stream()
                .filter(pid -> "dockerd"
                        .equals(Optional.ofNullable(Procfs.read(Path.of("/proc", Long.toString(pid), "comm")))
                                .map(String::strip)
                                .orElse("")))
                .findFirst();
        if (dockerd.isEmpty() || ours.isEmpty() || !ours.equals(mountNamespace(dockerd.get()))) {
            return new VolumeMounts(root, "the Docker engine's dockerd is not in this server's mount namespace");
        }
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            return new VolumeMounts(root, "cannot create " + root + ": " + e.getMessage());
        }
        return new VolumeMounts(root, null);
    }

    private static Optional<String> mountNamespace(long pid) {
        try {
            return Optional.of(Files.readSymbolicLink(Path.of("/proc", Long.toString(pid), "ns", "mnt"))
                    .toString());
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }

    /** Why volumes are bound without {@code nosuid,nodev}; null when they are staged. */
    String problem() {
        return problem;
    }

    /**
     * The path the container should bind for each of a sandbox's volumes: its staged mount, or, when staging is not
     * possible here, the volume itself.
     *
     * @throws IOException when staging should work but failed (the sandbox must not start with a setuid-capable
     *                     volume then); what was staged is undone
     */
    List<Path> stage(String sandboxId, List<VolumeBinding> volumes) throws IOException {
        List<Path> sources = new ArrayList<>();
        if (problem != null || volumes.isEmpty()) {
            volumes.forEach(v -> sources.add(v.source()));
            return sources;
        }
        Path dir = root.resolve(sandboxId);
        release(sandboxId); // a leftover of an earlier sandbox of this id
        try {
            Files.createDirectories(dir);
            for (int i = 0; i < volumes.size(); i++) {
                VolumeBinding v = volumes.get(i);
                if (!Files.isDirectory(v.source(), LinkOption.NOFOLLOW_LINKS)) {
                    throw new IOException("the volume " + v.source() + " is not a directory");
                }
                Path staged = dir.resolve(Integer.toString(i));
                Files.createDirectory(staged);
                run("mount", "--bind", v.source().toString(), staged.toString());
                run("mount", "--make-private", staged.toString());
                run("mount", "-o", "remount,bind,nosuid,nodev" + (v.readOnly() ? ",ro" : ""), staged.toString());
                sources.add(staged);
            }
            return sources;
        } catch (IOException e) {
            release(sandboxId);
            throw e;
        }
    }

    /** Unmounts and removes a sandbox's staged volumes (after its container is gone). */
    void release(String sandboxId) {
        if (problem != null) {
            return;
        }
        Path dir = root.resolve(sandboxId);
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (DirectoryStream<Path> staged = Files.newDirectoryStream(dir)) {
            for (Path p : staged) {
                try {
                    run("umount", "-l", p.toString()); // lazily: an exec's cwd in it must not keep it
                } catch (IOException e) {
                    // not mounted (any more)
                }
                Files.deleteIfExists(p); // only an empty mount point: never a volume's contents
            }
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // what is left goes at the next reconcile
        }
    }

    /** Releases the staged volumes of every sandbox but {@code keep} (after a restart). */
    void releaseAllBut(Collection<String> keep) {
        if (problem != null || !Files.isDirectory(root)) {
            return;
        }
        try (DirectoryStream<Path> all = Files.newDirectoryStream(root)) {
            for (Path p : all) {
                if (!keep.contains(p.getFileName().toString())) {
                    release(p.getFileName().toString());
                }
            }
        } catch (IOException e) {
            // nothing to clean up
        }
    }

    private static void run(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", cmd) + " did not finish within 30 s");
            }
            if (p.exitValue() != 0) {
                throw new IOException(String.join(" ", cmd) + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted while running " + cmd[0], e);
        }
    }
}
