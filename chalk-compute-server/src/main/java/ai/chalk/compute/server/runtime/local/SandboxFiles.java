package ai.chalk.compute.server.runtime.local;

import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** File-system work on sandbox roots and writable layers, done without ever following a link out of them. */
final class SandboxFiles {

    /** The host's top-level system entries a sandbox sees: symlinks are recreated, directories bound read-only. */
    static final List<String> SYSTEM_ENTRIES = List.of("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32");

    /** Files masked with {@code /dev/null} and directories masked with an empty read-only directory. */
    static final List<String> MASKED_FILES = List.of("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-");

    static final List<String> MASKED_DIRS = List.of("/etc/ssl/private");

    private SandboxFiles() {}

    /** What of the host's root a sandbox gets: read-only bind mounts, and symlinks to recreate in its layer. */
    record SystemView(List<String> readOnlyDirs, List<Link> links, List<String> maskedFiles, List<String> maskedDirs) {}

    record Link(String path, String target) {}

    /**
     * The host's system entries as a sandbox sees them. A top-level symlink such as {@code /lib64 -> usr/lib64}
     * is bound read-only as a directory rather than recreated as a link in the writable layer: a sandbox owns its
     * layer's root, so it could swap such a link, and the privileged helpers that enter a sandbox
     * ({@code nsenter --root}) load their dynamic loader and libraries through these paths. Every file and
     * directory under {@code /etc} that the host keeps from other users is masked, since a sandbox's root
     * (uid 0 without capabilities) still has the owner's access to root's files.
     */
    static SystemView hostSystemView(EtcMasks etc) {
        List<String> dirs = new ArrayList<>();
        for (String name : SYSTEM_ENTRIES) {
            Path p = Path.of("/", name);
            if (Files.isDirectory(p)) { // a link to a directory counts, and is bound as one
                dirs.add("/" + name);
            }
        }
        List<String> maskedFiles = new ArrayList<>();
        List<String> maskedDirs = new ArrayList<>();
        for (String f : MASKED_FILES) {
            if (Files.exists(Path.of(f), LinkOption.NOFOLLOW_LINKS)) {
                maskedFiles.add(f);
            }
        }
        for (String d : MASKED_DIRS) {
            if (Files.isDirectory(Path.of(d), LinkOption.NOFOLLOW_LINKS)) {
                maskedDirs.add(d);
            }
        }
        EtcMasks.Masks unreadable = etc.current();
        maskedFiles.addAll(unreadable.files());
        maskedDirs.addAll(unreadable.dirs());
        return new SystemView(
                List.copyOf(dirs),
                List.of(),
                List.copyOf(maskedFiles.stream().distinct().toList()),
                List.copyOf(maskedDirs.stream().distinct().toList()));
    }

    /** Creates a fresh writable layer with the system symlinks in place. */
    static void createLayer(Path layer, SystemView view) throws IOException {
        if (Files.exists(layer, LinkOption.NOFOLLOW_LINKS)) {
            NoFollowDelete.delete(layer);
        }
        Files.createDirectories(layer);
        for (Link link : view.links()) {
            try {
                Files.createSymbolicLink(layer.resolve(link.path().substring(1)), Path.of(link.target()));
            } catch (FileAlreadyExistsException e) {
                // already there
            }
        }
    }

    /**
     * Creates a writable layer from a copy of {@code seed} (a snapshot of an earlier sandbox's layer), made safe to
     * set up: the runtime creates, mounts over and changes the mode of a few paths of a layer as root before the
     * sandbox starts, and a snapshot holds what a sandbox wrote, so a symlink at one of those paths could turn that
     * work onto the host. The top-level system entries and mount points ({@code /usr}, {@code /etc}, {@code /proc},
     * {@code /dev} ..., hidden by mounts in a running sandbox anyway) are dropped from the copy and recreated, and
     * along each of {@code ownedPaths} (absolute paths the runtime will create or mount on: {@code /tmp}, the
     * working directory, volume mount points) whatever is not a plain directory is removed.
     */
    static void createLayer(Path layer, SystemView view, Path seed, List<String> ownedPaths) throws IOException {
        if (!Files.isDirectory(seed, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("the initial filesystem " + seed + " is not a directory");
        }
        if (Files.exists(layer, LinkOption.NOFOLLOW_LINKS)) {
            NoFollowDelete.delete(layer);
        }
        Files.createDirectories(layer.getParent());
        copyTree(seed, layer);
        List<String> topLevel = new ArrayList<>(SYSTEM_ENTRIES);
        topLevel.addAll(List.of("proc", "dev", "sys", ".chalk-old-root"));
        for (String name : topLevel) {
            NoFollowDelete.delete(layer.resolve(name));
        }
        for (String owned : ownedPaths) {
            Path at = layer;
            for (String name : owned.split("/")) {
                if (name.isEmpty() || name.equals(".")) {
                    continue;
                }
                if (name.equals("..")) {
                    break; // never outside the layer; the service layer refuses such paths anyway
                }
                at = at.resolve(name);
                if (!Files.exists(at, LinkOption.NOFOLLOW_LINKS)) {
                    break;
                }
                if (!Files.isDirectory(at, LinkOption.NOFOLLOW_LINKS)) {
                    NoFollowDelete.delete(
                            at); // a file or a symlink (NoFollowDelete removes the link, never its target)
                    break;
                }
            }
        }
        for (Link link : view.links()) {
            try {
                Files.createSymbolicLink(layer.resolve(link.path().substring(1)), Path.of(link.target()));
            } catch (FileAlreadyExistsException e) {
                // already there
            }
        }
    }

    /**
     * Copies the directory tree {@code source} to {@code destination} (which must not exist) through a pipe between
     * two GNU {@code tar}s: modes, numeric ownership, timestamps, extended attributes (overlay whiteouts and opaque
     * directories included), symlinks (copied as links, never followed), hard links, device nodes and FIFOs are
     * kept, and no other file system is entered. The copy is made next to {@code destination} and renamed into
     * place, so on failure nothing is left at {@code destination}.
     *
     * <p>The source may be a running sandbox's layer (a snapshot without a freezer), which its processes change while
     * it is read, swapping directories for links to host paths at will. GNU {@code tar} reads a tree descriptor by
     * descriptor ({@code openat(parent, name, O_NOFOLLOW)} at every level), so a swapped-in link fails to open (and
     * is skipped with {@code --ignore-failed-read}) instead of leading the copy out of the layer; {@code cp -a}, which
     * opens {@code source/a/b/c} by its full name, would have copied host files into the snapshot.
     */
    static void copyTree(Path source, Path destination) throws IOException {
        copyTree(source, destination, () -> false);
    }

    /** {@link #copyTree(Path, Path)}, stopped (an {@link IOException}, nothing left) when {@code stop} says so. */
    static void copyTree(Path source, Path destination, BooleanSupplier stop) throws IOException {
        if (Files.exists(destination, LinkOption.NOFOLLOW_LINKS)) {
            throw new FileAlreadyExistsException(destination.toString());
        }
        if (!Files.isDirectory(source, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(source + " is not a directory");
        }
        Path tar = Files.isExecutable(Path.of("/bin/tar")) ? Path.of("/bin/tar") : Path.of("/usr/bin/tar");
        if (!Files.isExecutable(tar)) {
            throw new IOException("cannot copy " + source + ": GNU tar is not installed on this host");
        }
        Path partial = destination.resolveSibling(destination.getFileName() + ".partial");
        NoFollowDelete.delete(partial);
        Files.createDirectory(partial);
        List<Process> pipe = ProcessBuilder.startPipeline(List.of(
                new ProcessBuilder(
                                tar.toString(),
                                "-C",
                                source.toString(),
                                "-c",
                                "-f",
                                "-",
                                "--one-file-system",
                                "--numeric-owner",
                                // holes stay holes: a sparse file of terabytes holds no bytes of its layer's quota
                                "--sparse",
                                "--xattrs",
                                "--xattrs-include=*",
                                "--ignore-failed-read",
                                "--warning=no-file-changed",
                                "--warning=no-file-removed",
                                "--warning=no-file-ignored",
                                ".")
                        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))),
                new ProcessBuilder(
                                tar.toString(),
                                "-C",
                                partial.toString(),
                                "-x",
                                "-f",
                                "-",
                                "--preserve-permissions",
                                "--numeric-owner",
                                "--same-owner",
                                "--xattrs",
                                "--xattrs-include=*")
                        .redirectErrorStream(true)));
        Process reader = pipe.get(0);
        Process writer = pipe.get(1);
        CompletableFuture<byte[]> readerSaid = CompletableFuture.supplyAsync(() -> head(reader.getErrorStream()));
        CompletableFuture<byte[]> writerOutput = CompletableFuture.supplyAsync(() -> head(writer.getInputStream()));
        int read;
        int written;
        try {
            while (!writer.waitFor(100, TimeUnit.MILLISECONDS)) {
                if (stop.getAsBoolean()) {
                    reader.destroyForcibly();
                    writer.destroyForcibly();
                    writer.waitFor();
                    NoFollowDelete.delete(partial);
                    throw new IOException("the copy of " + source + " was stopped");
                }
            }
            written = writer.exitValue();
            read = reader.waitFor();
        } catch (InterruptedException e) {
            reader.destroyForcibly();
            writer.destroyForcibly();
            Thread.currentThread().interrupt();
            NoFollowDelete.delete(partial);
            throw new IOException("interrupted while copying " + source, e);
        }
        // the reader's 1 is "some files changed while being read": expected of a sandbox that runs meanwhile
        if (read > 1 || written != 0) {
            NoFollowDelete.delete(partial);
            String why = (new String(readerSaid.join(), StandardCharsets.UTF_8) + "\n"
                            + new String(writerOutput.join(), StandardCharsets.UTF_8))
                    .trim();
            throw new IOException("copying the files failed (tar exit codes " + read + ", " + written + ")"
                    + (why.isEmpty()
                            ? ""
                            : ": "
                                    + why.lines()
                                            .limit(5)
                                            .reduce((a, b) -> a + "; " + b)
                                            .orElse("")));
        }
        try {
            Files.move(partial, destination, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            NoFollowDelete.delete(partial);
            throw e;
        }
    }

    /** The first 4 KiB of what a helper printed; the rest is read and dropped so it never blocks. */
    private static byte[] head(java.io.InputStream in) {
        try (in) {
            byte[] said = in.readNBytes(4096);
            in.transferTo(java.io.OutputStream.nullOutputStream());
            return said;
        } catch (IOException e) {
            return new byte[0];
        }
    }
}
