package ai.chalk.compute.server.volume;

import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import ai.chalk.compute.server.runtime.host.BeneathRoot;
import ai.chalk.compute.server.runtime.host.DiskReserve;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.runtime.host.RegularFileReader;
import ai.chalk.compute.server.store.VolumeStore;
import ai.chalk.compute.server.store.VolumeStore.VolumeRecord;
import com.google.protobuf.ByteString;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;

/**
 * Volumes: a record in the store and a directory under {@code <data-dir>/volumes} that outlives sandboxes and server
 * restarts. Each volume belongs to one environment, and names are unique within it: environment {@code default}'s
 * volume {@code cache} is {@code volumes/cache} (as before environments existed), another environment's is
 * {@code volumes/<environment>+cache} ('+' appears in no volume or environment name, so directories never collide). File operations stay inside the directory: sandboxes that mount a volume
 * change it while the server works in it, so every path is resolved by {@link BeneathRoot}, which follows no link.
 */
public final class VolumeManager implements AutoCloseable {

    /** A volume's size unless the server is told otherwise (see {@link VolumeFileSystems}). */
    public static final long DEFAULT_VOLUME_BYTES = VolumeFileSystems.DEFAULT_BYTES;

    /** Largest file {@link #read} returns in one message; bigger files are read inside a sandbox. */
    public static final int MAX_FILE_BYTES = 32 << 20;

    /** A file in a volume: path relative to the volume, size, last change. */
    public record VolumeFile(String path, long size, Instant updatedAt) {}

    private final VolumeStore store;
    private final Path root;
    private final long bytes;
    private final long diskReserve;
    private final VolumeFileSystems fileSystems;

    /**
     * @param root   where volumes are, a directory each
     * @param images where each volume's file system image is
     * @param bytes  the size of a volume's file system
     * @param diskReserve the bytes of the disk no volume is created into
     */
    public VolumeManager(VolumeStore store, Path root, Path images, long bytes, long diskReserve) {
        this.diskReserve = diskReserve;
        this.store = store;
        this.root = root;
        this.bytes = bytes;
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the volumes directory " + root, e);
        }
        this.fileSystems = VolumeFileSystems.at(images, root, bytes);
    }

    /**
     * What the volumes of one environment may promise of the disk: half of what its reserve leaves, or four volumes
     * where that is more. The volumes are sparse, so together they may promise more than the disk holds; without a
     * share, one tenant creating volumes and filling them filled the disk every tenant's store and blobs are on.
     */
    long share() {
        try {
            long usable = Files.getFileStore(root).getTotalSpace() - diskReserve;
            return Math.max(4 * bytes, usable / 2);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the disk of the volumes at " + root, e);
        }
    }

    /** Unmounts the volumes' file systems (the server stops; sandboxes that had them are gone). */
    @Override
    public void close() {
        fileSystems.close();
    }

    /**
     * Creates an empty volume in the environment; ALREADY_EXISTS when the environment has one of that name,
     * RESOURCE_EXHAUSTED when its volumes would promise more than its share of the disk ({@link #share}) or the disk
     * is down to its reserve.
     */
    public VolumeRecord create(String environment, String name) {
        VolumePaths.checkName(name);
        VolumeRecord created;
        synchronized (this) { // the count and the insert together: concurrent creates do not pass the share
            long share = share();
            long held = store.count(environment);
            if ((held + 1) * bytes > share) {
                throw ComputeException.exhausted("this environment has " + held + " volumes, each a file system of "
                        + (bytes >> 20) + " MiB that fills the server's disk as it is written, and one more would"
                        + " promise more than its share of that disk (" + (share >> 20) + " MiB): delete a volume"
                        + " first (or run the server with a smaller --volume-size)");
            }
            try {
                if (DiskReserve.below(root, diskReserve)) {
                    throw ComputeException.exhausted(
                            "cannot create volume " + name + ": " + DiskReserve.state(root, diskReserve));
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the disk of volume " + name, e);
            }
            created = store.insert(environment, name, Instant.now())
                    .orElseThrow(() -> ComputeException.alreadyExists("volume " + name + " already exists"));
        }
        String onDisk = onDisk(environment, name);
        try {
            fileSystems.create(onDisk, root.resolve(onDisk));
        } catch (IOException e) {
            store.delete(environment, name);
            throw new UncheckedIOException("cannot create the file system of volume " + name, e);
        }
        return created;
    }

    /**
     * The environment's volume's record; NOT_FOUND names the volume (another environment's volume of that name is not
     * this environment's concern: the answer is the same as for a name nobody uses).
     */
    public VolumeRecord get(String environment, String name) {
        VolumePaths.checkName(name);
        return store.find(environment, name)
                .orElseThrow(() ->
                        ComputeException.notFound("volume " + name + " does not exist; create it with CreateVolume"));
    }

    /** A page of the environment's volumes in name order, after {@code afterName}. */
    public List<VolumeRecord> list(String environment, String afterName, int limit) {
        return store.list(environment, afterName, limit);
    }

    /** The environment's volume's directory on the host, for mounting. */
    public Path directory(String environment, String name) {
        VolumeRecord v = get(environment, name);
        return root.resolve(onDisk(v.environment(), v.name()));
    }

    /** The name of a volume's directory and file system image: see the class comment. */
    static String onDisk(String environment, String name) {
        // default's volumes stay where volumes were before environments existed
        return environment.equals(Caller.DEFAULT_ENVIRONMENT) ? name : environment + "+" + name;
    }

    /** Deletes a volume and its files (links inside are removed, never followed). */
    public void delete(String environment, String name) {
        Path dir = directory(environment, name);
        store.delete(environment, name);
        try {
            fileSystems.delete(onDisk(environment, name), dir);
            NoFollowDelete.delete(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("volume " + name + " was deleted but its files could not all be removed", e);
        }
    }

    /**
     * What one listing may walk: a sandbox can make a million names of kilobytes each in a volume, and a listing of all
     * of them, held whole (ListFiles has no pages), took gigabytes of the server's heap per call.
     */
    static final BeneathRoot.WalkBounds LISTING_BOUNDS = new BeneathRoot.WalkBounds(20_000, 1_000_000);

    /** What a listing at its bounds holds of the heap (names, paths, the answer), reserved until it is sent. */
    public static final long LISTING_BYTES = 16L << 20;

    /**
     * Files under the volume whose path starts with {@code prefix}, sorted by path; links are neither listed nor
     * entered. {@link #LISTING_BYTES} are reserved from {@code budget} for {@code environment} first (the caller
     * releases them once the answer is sent); RESOURCE_EXHAUSTED when the budget or the environment's half cannot take
     * them, or when the directories walked hold more than {@link #LISTING_BOUNDS}.
     */
    public List<VolumeFile> files(String environment, String name, String prefix, EnvironmentBytes budget) {
        String wanted = prefix == null ? "" : prefix.replaceFirst("^/+", "");
        reserve(budget, environment, LISTING_BYTES, "a listing of volume " + name);
        boolean listed = false;
        try (BeneathRoot volume = open(environment, name)) {
            // only what can be or hold a match: "a/b" for the prefix "a/b/c", anything under "a/b/c"
            List<VolumeFile> files =
                    volume.files("", p -> p.startsWith(wanted) || wanted.startsWith(p + "/"), LISTING_BOUNDS).stream()
                            .filter(f -> f.path().startsWith(wanted))
                            .map(f -> new VolumeFile(
                                    f.path(),
                                    f.attributes().size(),
                                    f.attributes().modified()))
                            .sorted(Comparator.comparing(VolumeFile::path))
                            .toList();
            listed = true;
            return files;
        } catch (BeneathRoot.TooManyNames e) {
            throw ComputeException.exhausted("volume " + name + " holds " + e.getMessage() + ", more than one listing"
                    + " returns: list a narrower prefix");
        } catch (IOException e) {
            throw failure(name, prefix, "list", e);
        } finally {
            if (!listed) {
                budget.release(environment, LISTING_BYTES);
            }
        }
    }

    /** Reserves {@code bytes} of {@code budget} for {@code environment}, or refuses them saying for what. */
    private static void reserve(EnvironmentBytes budget, String environment, long bytes, String what) {
        EnvironmentBytes.Refusal refusal = budget.tryReserve(environment, bytes);
        if (refusal == EnvironmentBytes.Refusal.ENVIRONMENT_SHARE) {
            throw ComputeException.exhausted("this environment's calls hold " + budget.held(environment)
                    + " bytes of " + budget.budget().what() + " that their clients have not taken yet, and " + what
                    + " (" + bytes + " bytes) would take them past their half (" + budget.share()
                    + ") of the server's " + budget.budget().limit() + ": read those answers, or cancel their"
                    + " calls, first");
        }
        if (refusal == EnvironmentBytes.Refusal.BUDGET) {
            throw ComputeException.exhausted("the server holds "
                    + budget.budget().used() + " bytes of "
                    + budget.budget().what() + " for other calls, and " + what + " (" + bytes + " bytes) would"
                    + " take it past its " + budget.budget().limit() + ": try again once those have been sent");
        }
    }

    /**
     * A file's bytes, reserved from {@code budget} for {@code environment} (the caller releases their length once they
     * are sent); NOT_FOUND when absent, RESOURCE_EXHAUSTED past {@link #MAX_FILE_BYTES} or when the budget or the
     * environment's half of it cannot take them,
     * FAILED_PRECONDITION when the path is not a regular file or goes through a link. A file written meanwhile is read
     * up to the size it had when it was opened.
     */
    public byte[] read(String environment, String name, String path, EnvironmentBytes budget) {
        String relative = VolumePaths.relative(path);
        try (BeneathRoot volume = open(environment, name);
                RegularFileReader in = volume.openFile(relative)) {
            long size = in.size();
            if (size > MAX_FILE_BYTES) {
                throw tooLarge(path, size);
            }
            // reserved before it is read: files read at once for callers that are slow to take them filled the heap
            reserve(budget, environment, size, "\"" + path + "\"");
            byte[] data;
            try {
                // what the file held when it was opened: one a sandbox appends to meanwhile is read up to there
                data = in.readNBytes((int) size);
            } catch (IOException | RuntimeException | Error e) {
                budget.release(environment, size);
                throw e;
            }
            budget.release(environment, size - data.length);
            return data;
        } catch (IOException e) {
            throw failure(name, path, "read", e);
        }
    }

    private static ComputeException tooLarge(String path, long size) {
        return ComputeException.exhausted("\"" + path + "\" is " + size + " bytes; GetFile returns at most "
                + MAX_FILE_BYTES + ": mount the volume in a sandbox and stream it from there");
    }

    /**
     * Writes a file atomically (readers see the old or the new content), creating parent directories;
     * RESOURCE_EXHAUSTED past {@link #MAX_FILE_BYTES}, the most {@link #read} returns, so that what is written whole
     * can be read back whole.
     */
    public void write(String environment, String name, String path, ByteString data) {
        String relative = VolumePaths.relative(path);
        if (data.size() > MAX_FILE_BYTES) {
            throw ComputeException.exhausted("\"" + path + "\" is " + data.size() + " bytes; PutFile takes at most "
                    + MAX_FILE_BYTES + ": mount the volume in a sandbox and write it from there");
        }
        try (BeneathRoot volume = open(environment, name)) {
            // read from the request's own bytes: a copy of them was another 32 MiB of heap per call under way
            volume.replaceFile(relative, data.newInput());
        } catch (IOException e) {
            throw failure(name, path, "write", e);
        }
    }

    /** Removes a file (or a link, or an empty directory); NOT_FOUND when absent. */
    public void remove(String environment, String name, String path) {
        String relative = VolumePaths.relative(path);
        try (BeneathRoot volume = open(environment, name)) {
            if (!volume.delete(relative)) {
                throw ComputeException.notFound("volume " + name + " has no file \"" + path + "\"");
            }
        } catch (DirectoryNotEmptyException e) {
            throw ComputeException.refused("\"" + path + "\" is a directory that is not empty");
        } catch (IOException e) {
            throw failure(name, path, "remove", e);
        }
    }

    /** The volume's directory, opened so that every path in it resolves beneath it without following a link. */
    private BeneathRoot open(String environment, String name) throws IOException {
        return BeneathRoot.open(directory(environment, name), "volume " + name);
    }

    /** The status for a failed file operation: what the client can do about it, never a host path. */
    private static RuntimeException failure(String name, String path, String verb, IOException e) {
        if (e instanceof NoSuchFileException) {
            return ComputeException.notFound("volume " + name + " has no file \"" + path + "\"");
        }
        if (e instanceof BeneathRoot.Refused) {
            return ComputeException.refused("volume " + name + ": " + e.getMessage());
        }
        if (e instanceof BeneathRoot.OutOfSpace) {
            return ComputeException.exhausted(
                    "cannot " + verb + " \"" + path + "\" in volume " + name + ": " + e.getMessage());
        }
        if (e instanceof FileSystemException f && f.getReason() != null) {
            return ComputeException.refused(
                    "cannot " + verb + " \"" + path + "\" in volume " + name + ": " + f.getReason());
        }
        return new UncheckedIOException("cannot " + verb + " \"" + path + "\" in volume " + name, e);
    }
}
