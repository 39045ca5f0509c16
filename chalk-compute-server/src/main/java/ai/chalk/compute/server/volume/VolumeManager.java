package ai.chalk.compute.server.volume;

import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.store.VolumeStore;
import ai.chalk.compute.server.store.VolumeStore.VolumeRecord;
import io.grpc.Status;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * Volumes: a record in the store and a directory under {@code <data-dir>/volumes/<name>} that
 * outlives sandboxes and server restarts. File operations stay inside the directory.
 */
public final class VolumeManager {

    /** Largest file {@link #read} returns in one message; bigger files are read inside a sandbox. */
    public static final int MAX_FILE_BYTES = 32 << 20;

    /** A file in a volume: path relative to the volume, size, last change. */
    public record VolumeFile(String path, long size, Instant updatedAt) {
    }

    private final VolumeStore store;
    private final Path root;

    public VolumeManager(VolumeStore store, Path root) {
        this.store = store;
        this.root = root;
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the volumes directory " + root, e);
        }
    }

    /** Creates an empty volume; ALREADY_EXISTS when the name is taken. */
    public VolumeRecord create(String name) {
        VolumePaths.checkName(name);
        VolumeRecord created = store.insert(name, Instant.now()).orElseThrow(() -> Status.ALREADY_EXISTS
                .withDescription("volume " + name + " already exists").asRuntimeException());
        try {
            Files.createDirectories(root.resolve(name));
        } catch (IOException e) {
            store.delete(name);
            throw new UncheckedIOException(e);
        }
        return created;
    }

    /** The volume's record; NOT_FOUND names the volume. */
    public VolumeRecord get(String name) {
        VolumePaths.checkName(name);
        return store.find(name).orElseThrow(() -> Status.NOT_FOUND
                .withDescription("volume " + name + " does not exist; create it with CreateVolume").asRuntimeException());
    }

    /** A page of volumes in name order, after {@code afterName}. */
    public List<VolumeRecord> list(String afterName, int limit) {
        return store.list(afterName, limit);
    }

    /** The volume's directory on the host, for mounting. */
    public Path directory(String name) {
        return root.resolve(get(name).name());
    }

    /** Deletes a volume and its files (links inside are removed, never followed). */
    public void delete(String name) {
        Path dir = directory(name);
        store.delete(name);
        try {
            NoFollowDelete.delete(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("volume " + name + " was deleted but its files could not all be removed", e);
        }
    }

    /** Files under the volume whose path starts with {@code prefix}, sorted by path. */
    public List<VolumeFile> files(String name, String prefix) {
        Path dir = directory(name);
        String wanted = prefix == null ? "" : prefix.replaceFirst("^/+", "");
        List<VolumeFile> out = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(dir)) { // walk does not follow links
            walk.filter(VolumePaths::isFile).forEach(p -> {
                String rel = dir.relativize(p).toString().replace('\\', '/');
                if (rel.startsWith(wanted)) {
                    try {
                        BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                        out.add(new VolumeFile(rel, a.size(), a.lastModifiedTime().toInstant()));
                    } catch (IOException e) {
                        // removed while listing: not part of the answer
                    }
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        out.sort((a, b) -> a.path().compareTo(b.path()));
        return out;
    }

    /** A file's bytes; NOT_FOUND when absent, RESOURCE_EXHAUSTED past {@link #MAX_FILE_BYTES}. */
    public byte[] read(String name, String path) {
        Path file = VolumePaths.resolve(directory(name), path);
        if (!VolumePaths.isFile(file)) {
            throw Status.NOT_FOUND.withDescription("volume " + name + " has no file \"" + path + "\"").asRuntimeException();
        }
        try {
            long size = Files.size(file);
            if (size > MAX_FILE_BYTES) {
                throw Status.RESOURCE_EXHAUSTED.withDescription("\"" + path + "\" is " + size + " bytes; GetFile returns"
                        + " at most " + MAX_FILE_BYTES + ": mount the volume in a sandbox and stream it from there")
                        .asRuntimeException();
            }
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes a file atomically (readers see the old or the new content), creating parent directories. */
    public void write(String name, String path, byte[] data) {
        Path file = VolumePaths.resolve(directory(name), path);
        try {
            if (Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
                throw Status.FAILED_PRECONDITION.withDescription("\"" + path + "\" is a directory in volume " + name)
                        .asRuntimeException();
            }
            Files.createDirectories(file.getParent());
            Path temp = file.resolveSibling("." + file.getFileName() + "." + UUID.randomUUID() + ".tmp");
            Files.write(temp, data);
            Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (java.nio.file.FileSystemException e) {
            throw Status.FAILED_PRECONDITION.withDescription("cannot write \"" + path + "\" in volume " + name + ": "
                    + e.getReason()).asRuntimeException();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Removes a file; NOT_FOUND when absent. */
    public void remove(String name, String path) {
        Path file = VolumePaths.resolve(directory(name), path);
        try {
            if (!Files.deleteIfExists(file)) {
                throw Status.NOT_FOUND.withDescription("volume " + name + " has no file \"" + path + "\"").asRuntimeException();
            }
        } catch (java.nio.file.DirectoryNotEmptyException e) {
            throw Status.FAILED_PRECONDITION.withDescription("\"" + path + "\" is a directory that is not empty")
                    .asRuntimeException();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
