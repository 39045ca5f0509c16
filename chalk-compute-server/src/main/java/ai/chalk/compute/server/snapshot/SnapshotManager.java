package ai.chalk.compute.server.snapshot;

import ai.chalk.compute.proto.container.v1.ChalkContainerSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.runtime.RuntimeSandbox;
import ai.chalk.compute.server.runtime.SandboxOperationException;
import ai.chalk.compute.server.runtime.host.DiskReserve;
import ai.chalk.compute.server.runtime.host.NoFollowDelete;
import ai.chalk.compute.server.sandbox.ContainerSpecs;
import ai.chalk.compute.server.sandbox.LiveSandbox;
import ai.chalk.compute.server.sandbox.SandboxManager;
import ai.chalk.compute.server.sandbox.SnapshotRestorer;
import ai.chalk.compute.server.secret.LocalSecretSweep;
import ai.chalk.compute.server.store.SandboxRecord;
import ai.chalk.compute.server.store.SnapshotStore;
import ai.chalk.compute.server.store.SnapshotStore.SnapshotRecord;
import ai.chalk.compute.server.store.SnapshotStore.Status;
import ai.chalk.compute.server.threads.DaemonThreads;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Snapshots of sandboxes: each is a copy of a sandbox's writable filesystem in {@code <root>/<id>/files}, taken by
 * the runtime, with its record (status, the sandbox's spec) in the store, so that it survives restarts and seeds
 * any number of new sandboxes. A snapshot goes PENDING, IN_PROGRESS, then COMPLETED or FAILED; only a COMPLETED one
 * starts sandboxes. Deleting one removes its files; a snapshot being used to start a sandbox is deleted once that
 * copy is done. A snapshot belongs to its sandbox's environment; callers of another environment see none of it.
 */
public final class SnapshotManager implements SnapshotRestorer, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SnapshotManager.class);
    /** How long CreateSandboxSnapshot waits for the copy before it answers with the snapshot IN_PROGRESS. */
    static final Duration CREATE_WAIT = Duration.ofSeconds(20);
    /** Snapshots copied at once; more wait PENDING. */
    static final int WORKERS = 4;
    /** The directory of a snapshot that holds its files. */
    static final String FILES = "files";

    private final SnapshotStore store;
    private final SandboxManager sandboxes;
    private final Path root;
    private final ExecutorService workers;
    private final Map<String, ReentrantReadWriteLock> locks = new ConcurrentHashMap<>();
    private final LocalSecretSweep localSecrets;
    private final long diskReserve;

    /**
     * @param root         where snapshots' files live, {@code <data-dir>/snapshots}; created (mode 0700: snapshots
     *                     hold whatever sandboxes wrote) if missing
     * @param localSecrets hears that a snapshot was deleted, so the secrets saved for its local values may go
     * @param diskReserve  bytes of the disk a snapshot must leave free: one taken while less is free, or that leaves
     *                     less, is not kept (snapshots are copies of writable layers, as many as tenants ask for)
     */
    public SnapshotManager(
            SnapshotStore store, SandboxManager sandboxes, Path root, LocalSecretSweep localSecrets, long diskReserve) {
        this.diskReserve = diskReserve;
        this.store = store;
        this.localSecrets = localSecrets;
        this.sandboxes = sandboxes;
        this.root = root;
        try {
            Files.createDirectories(root);
            Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx------"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the snapshots directory " + root, e);
        } catch (UnsupportedOperationException e) {
            // not a POSIX file system: nothing to restrict
        }
        this.workers = Executors.newFixedThreadPool(WORKERS, DaemonThreads.numbered("chalk-snapshot"));
    }

    /**
     * After a start: snapshots that were being taken when the server stopped are FAILED (their copy is incomplete),
     * and files no record owns (a copy cut short, a delete interrupted) are removed.
     */
    public void recover() {
        for (SnapshotRecord r : store.withStatus(List.of(Status.PENDING, Status.IN_PROGRESS))) {
            deleteFiles(r.id());
            store.updateStatus(
                    r.id(),
                    Status.FAILED,
                    "the server stopped while the snapshot was being taken;" + " take a new one");
            log.info(
                    "Snapshot {} of sandbox {} recorded as failed: the server stopped while it was taken",
                    r.id(),
                    r.sandboxId());
        }
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root)) {
            for (Path d : dirs) {
                String name = d.getFileName().toString();
                if (store.find(name).isEmpty()) {
                    deleteFiles(name);
                    log.info("Removed leftover snapshot files {}", d);
                }
            }
        } catch (IOException e) {
            log.warn("Cannot list the snapshots directory {}: {}", root, e.toString());
        }
    }

    /**
     * Takes a snapshot of a running or suspended sandbox: the record is written PENDING, the copy starts at once,
     * and the record is returned as it stands when the copy is done or after {@link #CREATE_WAIT}, whichever is
     * first (then IN_PROGRESS or PENDING: poll {@link #get}).
     */
    public SnapshotRecord create(String environment, String sandboxId) {
        LiveSandbox sandbox = sandboxes.requireLive(environment, sandboxId);
        SandboxRecord sandboxRecord = sandboxes.get(environment, sandboxId);
        String id = UUID.randomUUID().toString();
        store.insert(
                environment,
                id,
                sandboxId,
                Instant.now(),
                ContainerSpecs.of(sandboxRecord).toByteArray());
        Future<?> copy = workers.submit(() -> take(id, sandbox));
        try {
            copy.get(CREATE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            log.info("Snapshot {} of sandbox {} is still being taken; the client polls it", id, sandboxId);
        } catch (ExecutionException e) {
            log.warn("Snapshot {} failed unexpectedly", id, e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return store.find(id).orElseThrow(() -> ComputeException.notFound("snapshot " + id + " was deleted meanwhile"));
    }

    private void take(String id, LiveSandbox sandbox) {
        store.updateStatus(id, Status.IN_PROGRESS, null);
        Path dir = root.resolve(id);
        long started = System.nanoTime();
        try {
            Files.createDirectory(dir);
            if (DiskReserve.below(root, diskReserve)) {
                fail(id, noRoom("before the copy"));
                return;
            }
            // the copy itself stops once it has used the reserve, while it goes on (several copies can run at once)
            AtomicBoolean stopped = new AtomicBoolean();
            RuntimeSandbox.SnapshotResult result;
            try {
                result = sandbox.runtime().snapshot(dir.resolve(FILES), () -> {
                    if (!stopped.get() && below()) {
                        stopped.set(true);
                    }
                    return stopped.get();
                });
            } catch (IOException e) {
                if (stopped.get()) {
                    fail(id, noRoom("during the copy"));
                    return;
                }
                throw e;
            }
            if (DiskReserve.below(root, diskReserve)) {
                fail(id, noRoom("after the copy"));
                return;
            }
            store.updateStatus(id, Status.COMPLETED, result.note().isEmpty() ? null : result.note());
            log.info(
                    "Snapshot {} of sandbox {} taken in {} ms{}",
                    id,
                    sandbox.id(),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                    result.frozen() ? " (frozen)" : "");
        } catch (SandboxOperationException e) {
            fail(id, e.getMessage());
        } catch (IOException e) {
            fail(id, "copying the sandbox's files failed: " + e.getMessage());
        } catch (RuntimeException e) {
            log.error("Snapshot {} of sandbox {} failed", id, sandbox.id(), e);
            fail(
                    id,
                    "the server failed while taking the snapshot ("
                            + e.getClass().getSimpleName() + "); the server log has the details");
        }
    }

    /** Whether the disk has less than the reserve free; false when that cannot be read (the copy goes on). */
    private boolean below() {
        try {
            return DiskReserve.below(root, diskReserve);
        } catch (IOException e) {
            return false;
        }
    }

    private String noRoom(String when) throws IOException {
        return DiskReserve.state(root, diskReserve) + " (seen " + when
                + "): the snapshot was not kept (delete snapshots, or free space on the server)";
    }

    private void fail(String id, String message) {
        deleteFiles(id);
        store.updateStatus(id, Status.FAILED, message);
        log.info("Snapshot {} failed: {}", id, message);
    }

    /**
     * The record of one of the environment's snapshots, or NOT_FOUND: another environment's answers as one that does
     * not exist, with the same message.
     */
    public SnapshotRecord get(String environment, String id) {
        requireId(id);
        return store.find(id)
                .filter(r -> r.environment().equals(environment))
                .orElseThrow(() -> ComputeException.notFound("snapshot " + id + " does not exist on this server"));
    }

    /** A page of snapshot records (the query names the environment). */
    public List<SnapshotRecord> list(SnapshotStore.Query query) {
        return store.list(query);
    }

    /**
     * Deletes a finished snapshot and its files: NOT_FOUND for an unknown id, FAILED_PRECONDITION while it is
     * being taken. Sandboxes started from it keep their own copy.
     */
    public void delete(String environment, String id) {
        requireId(id);
        get(environment, id); // before a lock is made for an id that is not the caller's
        ReentrantReadWriteLock lock = lock(id);
        lock.writeLock().lock();
        try {
            SnapshotRecord r = get(environment, id);
            if (!r.status().finished()) {
                throw ComputeException.refused("snapshot " + id + " is " + r.status()
                        + ": it is being taken; delete it once it is COMPLETED or FAILED");
            }
            store.delete(id); // first: files without a record are removed at the next start should this fail
            deleteFiles(id);
            locks.remove(id, lock);
            localSecrets.soon();
        } finally {
            lock.writeLock().unlock();
        }
        log.info("Snapshot {} deleted", id);
    }

    @Override
    public SandboxRecord createSandbox(String environment, String snapshotId) {
        requireId(snapshotId);
        get(environment, snapshotId);
        ReentrantReadWriteLock lock = lock(snapshotId);
        lock.readLock().lock();
        try {
            SnapshotRecord r = get(environment, snapshotId);
            switch (r.status()) {
                case COMPLETED -> {}
                case FAILED ->
                    throw ComputeException.refused("snapshot " + snapshotId
                            + " FAILED"
                            + r.statusMessage().map(m -> " (" + m + ")").orElse("")
                            + "; it cannot start sandboxes: take a new one");
                default ->
                    throw ComputeException.refused("snapshot " + snapshotId
                            + " is " + r.status() + ": it can start sandboxes once it is COMPLETED (GetSandboxSnapshot"
                            + " shows its status)");
            }
            Path files = root.resolve(snapshotId).resolve(FILES);
            if (!Files.isDirectory(files, LinkOption.NOFOLLOW_LINKS)) {
                throw ComputeException.refused("the files of snapshot " + snapshotId + " are missing from " + files
                        + "; delete it and take a new one");
            }
            return sandboxes.create(environment, spec(r), Optional.of(files));
        } finally {
            lock.readLock().unlock();
        }
    }

    /** The spec recorded with a snapshot: that of the sandbox it was taken of. */
    static ChalkContainerSpec spec(SnapshotRecord r) {
        try {
            return r.spec() == null ? ChalkContainerSpec.getDefaultInstance() : ChalkContainerSpec.parseFrom(r.spec());
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("the spec recorded with snapshot " + r.id() + " is unreadable", e);
        }
    }

    private ReentrantReadWriteLock lock(String id) {
        return locks.computeIfAbsent(id, k -> new ReentrantReadWriteLock());
    }

    private void deleteFiles(String id) {
        Path dir = root.resolve(id);
        try {
            NoFollowDelete.delete(dir);
        } catch (IOException e) {
            log.warn("Cannot remove the files of snapshot {} in {}: {}", id, dir, e.toString());
        }
    }

    private static void requireId(String id) {
        if (id == null || id.isBlank()) {
            throw ComputeException.invalid("snapshot_id is required");
        }
    }

    /** Stops taking snapshots; one still copying after a few seconds is recorded as FAILED at the next start. */
    @Override
    public void close() {
        workers.shutdown();
        try {
            if (!workers.awaitTermination(10, TimeUnit.SECONDS)) {
                workers.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            workers.shutdownNow();
        }
    }
}
