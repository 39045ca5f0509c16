package ai.chalk.compute.server.volume;

import ai.chalk.compute.server.runtime.host.WhenServerDies;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Each volume on a file system of its own: a sparse ext4 image under {@code <data-dir>/volume-images}, loop-mounted
 * {@code nosuid,nodev} at the volume's directory. So a volume has a size ({@code ENOSPC} past it: one volume cannot
 * take the whole disk, though sparse volumes together can promise more than it holds), nothing a sandbox plants there is set-id or a device on the host, and a sandbox that mounts it sees the
 * root of a file system ({@code /proc/self/mountinfo} shows no host path). Where the server cannot mount (not root, no
 * loop devices, no {@code mkfs.ext4}) volumes are plain directories, and the server says why at startup.
 */
final class VolumeFileSystems implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(VolumeFileSystems.class);
    /** A volume's size when the server is not told otherwise: sparse, so it takes only what is written. */
    static final long DEFAULT_BYTES = 16L << 30;

    private static final String MKFS = "/sbin/mkfs.ext4";
    private static final String MOUNT = "/bin/mount";
    private static final String UMOUNT = "/bin/umount";

    private final Path images;
    private final Path volumes;
    private final long bytes;
    private final String problem;
    private final WhenServerDies cleanup;

    private VolumeFileSystems(Path images, Path volumes, long bytes, String problem, WhenServerDies cleanup) {
        this.images = images;
        this.volumes = volumes;
        this.bytes = bytes;
        this.problem = problem;
        this.cleanup = cleanup;
    }

    /**
     * Volume file systems for the volume directories under {@code volumes}, their images in {@code images}; tries
     * once whether this host can make and mount them, and mounts the volumes that have one.
     */
    static VolumeFileSystems at(Path images, Path volumes, long bytes) {
        String problem = probe(images);
        WhenServerDies cleanup = null;
        if (problem == null) {
            try {
                // a killed server's volumes are unmounted right away; the next start mounts them again
                cleanup = WhenServerDies.start("chalk-volume-cleanup", """
                        for d in "$1"/*; do mountpoint -q "$d" && umount -l "$d"; done 2>/dev/null; exit 0
                        """, List.of(volumes.toString()));
            } catch (IOException e) {
                log.warn("A killed server's volumes stay mounted until its next start: {}", e.toString());
            }
        } else {
            log.warn("Volumes are plain directories, without a size limit: {}", problem);
        }
        VolumeFileSystems fs = new VolumeFileSystems(images, volumes, bytes, problem, cleanup);
        fs.mountAll();
        return fs;
    }

    private static String probe(Path images) {
        if (!Files.isExecutable(Path.of(MKFS)) || !Files.isExecutable(Path.of(MOUNT))) {
            return "mkfs.ext4 or mount is missing (apt-get install e2fsprogs mount)";
        }
        if (!Files.exists(Path.of("/dev/loop-control"))) {
            return "this host has no loop devices";
        }
        Path probe = images.resolve(".probe");
        Path image = images.resolve(".probe.ext4");
        try {
            Files.createDirectories(probe);
            make(image, 16 << 20);
            mount(image, probe);
            umount(probe);
            return null;
        } catch (IOException e) {
            return e.getMessage();
        } finally {
            try {
                Files.deleteIfExists(image);
                Files.deleteIfExists(probe);
            } catch (IOException e) {
                log.debug("Cannot remove {}: {}", probe, e.toString());
            }
        }
    }

    /** Whether volumes get file systems of their own here; empty when they do, else why not. */
    Optional<String> problem() {
        return Optional.ofNullable(problem);
    }

    private Path image(String name) {
        return images.resolve(name + ".ext4");
    }

    /** Makes the file system of a new volume and mounts it at {@code dir} (created when missing). */
    void create(String name, Path dir) throws IOException {
        Files.createDirectories(dir);
        if (problem != null) {
            return;
        }
        make(image(name), bytes);
        try {
            mount(image(name), dir);
            // a new volume starts empty, as a directory would (only now: later, what is there is the tenant's)
            Files.deleteIfExists(dir.resolve("lost+found"));
        } catch (IOException e) {
            Files.deleteIfExists(image(name));
            throw e;
        }
    }

    /** Unmounts a volume's file system (lazily: sandboxes may still have it) and removes its image. */
    void delete(String name, Path dir) throws IOException {
        if (Files.exists(image(name)) && mounted(dir)) {
            umount(dir);
        }
        Files.deleteIfExists(image(name));
    }

    private void mountAll() {
        if (problem != null) {
            return;
        }
        try (var list = Files.list(images)) {
            for (Path image : list.filter(p -> p.getFileName().toString().endsWith(".ext4"))
                    .toList()) {
                String file = image.getFileName().toString();
                Path dir = volumes.resolve(file.substring(0, file.length() - ".ext4".length()));
                if (Files.isDirectory(dir) && !mounted(dir)) {
                    try {
                        mount(image, dir);
                    } catch (IOException e) {
                        // one volume that cannot be mounted must not leave the others unmounted
                        log.warn("Cannot mount the file system of volume {}: {}", dir.getFileName(), e.getMessage());
                    }
                }
            }
        } catch (IOException e) {
            log.warn("Cannot mount the volumes' file systems: {}", e.getMessage());
        }
    }

    /** Unmounts every volume (the server stops). */
    @Override
    public void close() {
        if (problem == null) {
            try (var list = Files.list(volumes)) {
                for (Path dir : list.toList()) {
                    if (mounted(dir)) {
                        umount(dir);
                    }
                }
            } catch (IOException e) {
                log.warn("Cannot unmount the volumes' file systems: {}", e.getMessage());
            }
        }
        if (cleanup != null) {
            cleanup.close();
        }
    }

    /** A mount point is on another device than its parent. */
    static boolean mounted(Path dir) {
        try {
            return !Files.getAttribute(dir, "unix:dev").equals(Files.getAttribute(dir.getParent(), "unix:dev"));
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** A sparse image of {@code size} bytes with an empty ext4 on it (no reserved blocks, no lost+found). */
    private static void make(Path image, long size) throws IOException {
        Files.createDirectories(image.getParent());
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(size);
        }
        run(List.of(MKFS, "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", image.toString()));
    }

    private static void mount(Path image, Path dir) throws IOException {
        run(List.of(MOUNT, "-o", "loop,nosuid,nodev,noatime", image.toString(), dir.toString()));
    }

    private static void umount(Path dir) throws IOException {
        try {
            run(List.of(UMOUNT, dir.toString()));
        } catch (IOException e) {
            run(List.of(UMOUNT, "-l", dir.toString())); // busy: detached now, gone when its last user is
        }
    }

    private static void run(List<String> command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("LC_ALL", "C");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(command.get(0) + " did not finish within 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        if (p.exitValue() != 0) {
            List<String> shown = new ArrayList<>(command);
            throw new IOException(String.join(" ", shown) + " failed (exit " + p.exitValue() + "): " + out);
        }
    }
}
