package ai.chalk.compute.server.runtime.docker;

import ai.chalk.compute.server.runtime.RuntimeStartException;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.ChangeLog;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * Files in and out of containers, for snapshots and initial filesystems: what a container changed, taken from the
 * engine's export of its filesystem (so it works with an engine on another machine too) and unpacked with GNU
 * {@code tar} (modes, numeric ownership, symlinks, hard links and FIFOs kept); and a host directory copied into a
 * created container through the engine's archive API.
 */
final class ContainerFiles {

    private final DockerClient client;
    private final Executor helpers;

    ContainerFiles(DockerClient client, Executor helpers) {
        this.client = client;
        this.helpers = helpers;
    }

    /** Paths a snapshot never contains: the engine's own files and the kernel's. */
    private static final List<String> ENGINE_PATHS =
            List.of("/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/.dockerenv", "/proc", "/sys", "/dev");

    /**
     * Copies what the container changed (the engine's diff, without the volumes mounted at {@code mountPaths} and the
     * engine's files) from its export to {@code destination}, which must not exist; on failure nothing is left there.
     * Returns how many deleted paths could not be recorded.
     */
    int exportChanges(String containerId, List<String> mountPaths, Path destination, BooleanSupplier stop)
            throws IOException {
        if (Files.exists(destination, LinkOption.NOFOLLOW_LINKS)) {
            throw new FileAlreadyExistsException(destination.toString());
        }
        List<String> skip = new ArrayList<>(ENGINE_PATHS);
        skip.addAll(mountPaths);
        List<ChangeLog> changes;
        try {
            changes = client.containerDiffCmd(containerId).exec();
        } catch (RuntimeException e) {
            throw new IOException(
                    "the Docker engine could not list the sandbox's changes: " + DockerEngine.engineMessage(e), e);
        }
        List<String> names = new ArrayList<>();
        int deleted = 0;
        for (ChangeLog c : changes == null ? List.<ChangeLog>of() : changes) {
            String path = c.getPath();
            if (path == null || skip.stream().anyMatch(s -> path.equals(s) || path.startsWith(s + "/"))) {
                continue;
            }
            if (c.getKind() != null && c.getKind() == 2) {
                deleted++;
            } else {
                names.add(path.substring(1));
            }
        }
        Path partial = destination.resolveSibling(destination.getFileName() + ".partial");
        NoFollowDelete.delete(partial);
        Files.createDirectories(partial);
        try {
            if (!names.isEmpty()) {
                extract(containerId, names, partial, stop);
            }
            Files.move(partial, destination, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            NoFollowDelete.delete(partial);
            throw e;
        }
        return deleted;
    }

    private void extract(String containerId, List<String> names, Path into, BooleanSupplier stop) throws IOException {
        Path list = Files.createTempFile("chalk-snapshot-", ".list");
        try {
            try (OutputStream out = Files.newOutputStream(list, StandardOpenOption.WRITE)) {
                for (String n : names) {
                    out.write(n.getBytes(StandardCharsets.UTF_8));
                    out.write(0);
                }
            }
            // (-C before -T: GNU tar applies -C to the names that follow it)
            Process tar = new ProcessBuilder(
                            "tar",
                            "-x",
                            "-p",
                            "--numeric-owner",
                            "--no-recursion",
                            "-C",
                            into.toString(),
                            "--null",
                            "--verbatim-files-from",
                            "-T",
                            list.toString(),
                            "-f",
                            "-")
                    .redirectErrorStream(true)
                    .start();
            CompletableFuture<byte[]> said = CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return tar.getInputStream().readAllBytes();
                        } catch (IOException e) {
                            return new byte[0];
                        }
                    },
                    helpers);
            try (InputStream export = client.exportContainerCmd(containerId).exec();
                    OutputStream in = tar.getOutputStream()) {
                byte[] buffer = new byte[64 << 10];
                long sinceAsked = 0;
                for (int n; (n = export.read(buffer)) >= 0; ) {
                    in.write(buffer, 0, n);
                    sinceAsked += n;
                    if (sinceAsked >= STOP_CHECK_BYTES) {
                        sinceAsked = 0;
                        if (stop.getAsBoolean()) {
                            tar.destroyForcibly();
                            throw new CopyStoppedException();
                        }
                    }
                }
            } catch (CopyStoppedException e) {
                tar.waitFor();
                throw new IOException("the copy of the sandbox's files was stopped");
            } catch (IOException | RuntimeException e) {
                tar.destroyForcibly();
                throw new IOException(
                        "the Docker engine could not export the sandbox's files: "
                                + (e instanceof RuntimeException re ? DockerEngine.engineMessage(re) : e.getMessage()),
                        e);
            }
            int code = tar.waitFor();
            if (code != 0) {
                String why = new String(said.get(10, TimeUnit.SECONDS), StandardCharsets.UTF_8).trim();
                throw new IOException("extracting the sandbox's files failed (tar exit code " + code + ")"
                        + (why.isEmpty()
                                ? ""
                                : ": "
                                        + why.lines()
                                                .limit(5)
                                                .reduce((a, b) -> a + "; " + b)
                                                .orElse("")));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while copying the sandbox's files", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException("extracting the sandbox's files failed: " + e, e);
        } finally {
            Files.deleteIfExists(list);
        }
    }

    /** Copies a host directory into a created container's filesystem (an initial filesystem). */
    void copyInto(String containerId, Path dir) throws RuntimeStartException {
        try {
            Process tar = new ProcessBuilder("tar", "-c", "--numeric-owner", "-C", dir.toString(), ".")
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
            tar.getOutputStream().close();
            try (InputStream in = tar.getInputStream()) {
                client.copyArchiveToContainerCmd(containerId)
                        .withRemotePath("/")
                        .withNoOverwriteDirNonDir(true)
                        .withTarInputStream(in)
                        .exec();
            } catch (RuntimeException e) {
                tar.destroyForcibly();
                throw new RuntimeStartException(
                        "the initial filesystem could not be copied into the sandbox: " + DockerEngine.engineMessage(e),
                        e);
            }
            if (tar.waitFor() != 0) {
                throw new RuntimeStartException(
                        "the initial filesystem " + dir + " could not be read (tar exit code " + tar.exitValue() + ")");
            }
        } catch (IOException e) {
            throw new RuntimeStartException(
                    "the initial filesystem " + dir + " could not be read: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RuntimeStartException("interrupted while copying the initial filesystem", e);
        }
    }

    /** How much of the engine's export goes by between two asks whether to stop. */
    private static final long STOP_CHECK_BYTES = 16L << 20;

    /** The copy was asked to stop; not an I/O failure of its own. */
    private static final class CopyStoppedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CopyStoppedException() {
            super(null, null, false, false);
        }
    }
}
