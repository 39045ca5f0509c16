package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.host.SandboxDevices;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.UUID;

/**
 * A container's terminals: a {@code devpts} of its own holding at most {@link SandboxDevices#PTYS}, bound over the
 * engine's {@code /dev/pts}. The host has one pool of pseudo-terminals for every container and sandbox
 * ({@code kernel.pty.max}, a quarter of it kept for the host's root): the engine's own {@code devpts} has no
 * {@code max}, so one container opening {@code /dev/ptmx} in a loop took the whole pool (3,071 of 4,096 here), and
 * then no other container, sandbox or login on the host got a terminal. The Engine API cannot set {@code max}, but a
 * mount over {@code /dev/pts} replaces the engine's mount there, so the instance is made here, under this runtime's
 * state directory ({@code terminals/<sandbox>.<uuid>}, readable by the server only), before the container starts; once it has started the container keeps
 * its own copy of the mount and the host's is detached ({@link #release}). Its PTY execs land in it too.
 *
 * <p>Needs what staging volumes needs (root, the engine in this process's mount namespace; {@link VolumeMounts}) and
 * an engine that does not remap user namespaces (the instance's terminals would belong to host ids the container does
 * not map); elsewhere containers keep the engine's unlimited {@code devpts}, which {@link #problem()} says.
 */
final class ContainerTerminals {

    private final Path root;
    private final String problem;

    private ContainerTerminals(Path root, String problem) {
        this.root = root;
        this.problem = problem;
    }

    /**
     * The terminals of this runtime's containers, under {@code stateDir}.
     *
     * @param mountProblem why this host cannot stage mounts for the engine ({@link VolumeMounts#problem()}); null when
     *                     it can
     * @param remapped     whether the engine remaps user namespaces
     */
    static ContainerTerminals under(Path stateDir, String mountProblem, boolean remapped) {
        Path root = stateDir.resolve("terminals");
        if (mountProblem != null) {
            return new ContainerTerminals(root, mountProblem);
        }
        if (remapped) {
            return new ContainerTerminals(root, "the engine remaps user namespaces");
        }
        try {
            Files.createDirectories(root);
            // the server's alone: an instance's ptmx opens for anyone who can reach it (mode 0666, as the engine's),
            // and until the container has started the host's mount is reachable here
            Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx------"));
        } catch (IOException e) {
            return new ContainerTerminals(root, "cannot create " + root + ": " + e.getMessage());
        }
        return new ContainerTerminals(root, null);
    }

    /** Why containers keep the engine's unlimited {@code devpts}; null when they get their own. */
    String problem() {
        return problem;
    }

    /**
     * Mounts the terminals of a container of sandbox {@code sandboxId}, for it to bind at {@code /dev/pts}, in a
     * directory of this start's own (two starts of one id never share one); empty where containers keep the engine's.
     *
     * @throws IOException when the mount should work but failed (the container must not start with an unlimited
     *                     pool then)
     */
    Optional<Path> mount(String sandboxId) throws IOException {
        if (problem != null) {
            return Optional.empty();
        }
        Path dir = root.resolve(sandboxId + "." + UUID.randomUUID());
        try {
            SandboxDevices.mountPtys(dir);
        } catch (IOException e) {
            release(dir);
            throw e;
        }
        return Optional.of(dir);
    }

    /**
     * Detaches the host's mount of a container's terminals ({@link #mount}) and removes its mount point: once the
     * container has started (it keeps its own copy), or when it did not start. Quiet when there is none.
     */
    void release(Path dir) {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        SandboxDevices.unmountPtys(dir);
        try {
            Files.deleteIfExists(dir); // an empty mount point once detached; a devpts still mounted refuses
        } catch (IOException e) {
            // what is left goes at the next start of the runtime
        }
    }

    /** Releases every container's terminals: at the runtime's start, none is needed (started containers keep theirs). */
    void releaseAll() {
        if (problem != null || !Files.isDirectory(root)) {
            return;
        }
        try (DirectoryStream<Path> all = Files.newDirectoryStream(root)) {
            for (Path p : all) {
                release(p);
            }
        } catch (IOException e) {
            // nothing to clean up
        }
    }
}
