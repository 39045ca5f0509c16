package ai.chalk.compute.server.sql;

import ai.chalk.compute.server.blob.BlobDigest;
import ai.chalk.compute.server.blob.BlobStore;
import ai.chalk.compute.server.blob.DiskFullException;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.store.SqlJobStore;
import ai.chalk.compute.server.store.SqlJobStore.SqlJob;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SQL queries as the service runs them: each one recorded, run by the {@link SqlEngine}, its Parquet result kept in
 * the blob store, and found again by id (its environment's only) with fresh links. Async queries run on a small pool;
 * the ones a stopped server was running are failed at the next start, the ones running at close are canceled, and
 * both say so.
 */
public final class SqlQueries implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SqlQueries.class);
    static final String INTERRUPTED =
            "the server restarted while this query was queued or running, so it never" + " finished: submit it again";
    static final String SHUT_DOWN =
            "canceled: the server shut down while this query was queued or running;" + " submit it again";

    private final SqlEngine engine;
    private final SqlJobStore store;
    private final BlobStore blobs;
    private final FairJobs pool;
    private final Map<String, Runnable> cancels = new ConcurrentHashMap<>();

    public SqlQueries(SqlEngine engine, SqlJobStore store, BlobStore blobs) {
        this.engine = engine;
        this.store = store;
        this.blobs = blobs;
        this.pool = new FairJobs(engine.options().parallelJobs());
        int failed = store.failRunning(INTERRUPTED);
        if (failed > 0) {
            log.warn("{} SQL queries were running when the server stopped; they are failed", failed);
        }
    }

    /** The engine. */
    public SqlEngine engine() {
        return engine;
    }

    /** What a request asks for. */
    public record Request(
            String environment,
            String sql,
            Optional<String> resourceGroup,
            Optional<Long> memoryBytes,
            boolean persist) {}

    /**
     * A query run now: its record and, for a result returned inline, its Parquet bytes.
     *
     * @param job    the query as recorded
     * @param inline the result's bytes when not persisted
     */
    public record Finished(SqlJob job, byte @Nullable [] inline) {}

    /**
     * Runs a query now, on the calling thread, and records it once it ended (succeeded or failed), so its id can be
     * polled.
     *
     * @param onCancel receives what cancels it (the call's cancellation)
     * @throws SqlFailure when it is refused or fails (recorded as failed too)
     */
    public Finished runNow(Request request, Consumer<Runnable> onCancel) {
        long memory = memory(request.memoryBytes());
        String id = newId();
        Instant created = Instant.now();
        SqlEngine.Output out;
        try {
            out = engine.run(request.environment(), request.sql(), memory, request.persist(), onCancel);
        } catch (SqlFailure e) {
            store.insertFinished(job(
                    id,
                    request,
                    created,
                    SqlJobStore.State.FAILED,
                    List.of(),
                    e.getMessage(),
                    summary(request, memory, null)));
            throw e;
        }
        try {
            long bytes = size(out);
            if (!request.persist() && bytes > engine.options().inlineLimitBytes()) {
                SqlFailure tooLarge = tooLarge(bytes, out.rows());
                store.insertFinished(job(
                        id,
                        request,
                        created,
                        SqlJobStore.State.FAILED,
                        List.of(),
                        tooLarge.getMessage(),
                        summary(request, memory, out)));
                throw tooLarge;
            }
            byte[] inline =
                    request.persist() ? null : Files.readAllBytes(out.files().get(0));
            List<String> digests = keep(out, request.environment());
            SqlJob job = job(
                    id, request, created, SqlJobStore.State.SUCCEEDED, digests, null, summary(request, memory, out));
            store.insertFinished(job);
            return new Finished(job, inline);
        } catch (IOException e) {
            throw keepingFailed(e);
        } finally {
            engine.discard(out.dir());
        }
    }

    private static SqlJob job(
            String id,
            Request request,
            Instant created,
            SqlJobStore.State state,
            List<String> shards,
            @Nullable String error,
            String summary) {
        return new SqlJob(
                id,
                request.environment(),
                request.sql(),
                request.resourceGroup(),
                request.persist(),
                state,
                shards,
                Optional.ofNullable(error),
                summary,
                created,
                Optional.of(Instant.now()));
    }

    private static long size(SqlEngine.Output out) throws IOException {
        long bytes = 0;
        for (Path f : out.files()) {
            bytes += Files.size(f);
        }
        return bytes;
    }

    private SqlFailure tooLarge(long bytes, long rows) {
        return new SqlFailure(
                SqlFailure.Reason.TOO_LARGE,
                "the result is " + bytes + " bytes of Parquet (" + rows + " rows), more than the "
                        + engine.options().inlineLimitBytes() + " bytes a query returns inline: run it with"
                        + " persist (SQLClient.query(sql, true), or persistence_settings.enabled) to get it"
                        + " as files to download");
    }

    private List<String> keep(SqlEngine.Output out, String environment) throws IOException {
        List<String> digests = new ArrayList<>();
        for (Path f : out.files()) {
            digests.add(keep(f, environment).hex());
        }
        return digests;
    }

    /**
     * The most async queries one environment has queued or running: each queued one holds its SQL in the heap and a
     * row in the store, and one environment submitting without end held both without bound.
     */
    static final int MAX_QUEUED_PER_ENVIRONMENT = 64;

    private final Map<String, AtomicInteger> queued = new ConcurrentHashMap<>();

    /**
     * Queues a query; its result is persisted. Returns its id at once.
     *
     * @throws SqlFailure {@code TOO_LARGE} when the environment has {@value #MAX_QUEUED_PER_ENVIRONMENT} queued or
     *     running already
     */
    public String submit(Request request) {
        long memory = memory(request.memoryBytes());
        AtomicInteger mine = queued.computeIfAbsent(request.environment(), e -> new AtomicInteger());
        if (mine.incrementAndGet() > MAX_QUEUED_PER_ENVIRONMENT) {
            mine.decrementAndGet();
            throw new SqlFailure(
                    SqlFailure.Reason.TOO_LARGE,
                    "this environment has " + MAX_QUEUED_PER_ENVIRONMENT + " async SQL queries queued or running, the"
                            + " most it may; poll them (PollSqlQuery) and submit more as they finish");
        }
        String id;
        try {
            id = submitCounted(request, memory, mine);
        } catch (RuntimeException e) {
            mine.decrementAndGet();
            throw e;
        }
        return id;
    }

    private String submitCounted(Request request, long memory, AtomicInteger mine) {
        String id = newId();
        store.insert(
                id,
                request.environment(),
                request.sql(),
                request.resourceGroup(),
                true,
                summary(request, memory, null));
        pool.submit(request.environment(), () -> {
            try {
                execute(id, request, memory, cancel -> cancels.put(id, cancel));
            } catch (SqlFailure e) {
                log.debug("SQL query {} failed: {}", id, e.getMessage());
            } catch (RuntimeException e) {
                log.warn("SQL query {} failed unexpectedly: {}", id, e.toString());
            } finally {
                cancels.remove(id);
                mine.decrementAndGet();
            }
        });
        return id;
    }

    private void execute(String id, Request request, long memory, Consumer<Runnable> onCancel) {
        SqlEngine.Output out;
        try {
            out = engine.run(request.environment(), request.sql(), memory, request.persist(), onCancel);
        } catch (SqlFailure e) {
            store.failed(id, e.getMessage());
            throw e;
        }
        try {
            store.succeeded(id, keep(out, request.environment()), summary(request, memory, out));
        } catch (IOException e) {
            SqlFailure failure = keepingFailed(e);
            store.failed(id, failure.getMessage());
            throw failure;
        } finally {
            engine.discard(out.dir());
        }
    }

    /** Why a result could not be kept: RESOURCE_EXHAUSTED when the server's disk has no room for it, else INTERNAL. */
    private static SqlFailure keepingFailed(IOException e) {
        return new SqlFailure(
                e instanceof DiskFullException ? SqlFailure.Reason.TOO_LARGE : SqlFailure.Reason.FAILED,
                "keeping the result failed: " + e.getMessage(),
                e);
    }

    /**
     * Moves a result file into the blob store (digest first, then the checked upload), as the environment's: it counts
     * against its blob storage.
     */
    private BlobDigest keep(Path file, String environment) throws IOException {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), sha)) {
            in.transferTo(java.io.OutputStream.nullOutputStream());
        }
        BlobDigest digest = new BlobDigest(HexFormat.of().formatHex(sha.digest()));
        long size = Files.size(file);
        // stored even when present: the environment owns it then, and its use now keeps it from being collected
        try (BlobStore.Upload upload = blobs.begin(size, environment, digest);
                InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                upload.write(buffer, 0, n);
            }
            upload.commit(digest, size);
        } catch (BlobStore.BlobMismatchException e) {
            throw new IOException("the result file changed while it was stored: " + e.getMessage(), e);
        }
        return digest;
    }

    /** The bytes of a kept result file. */
    public byte[] read(String digest) throws IOException {
        try (InputStream in = blobs.open(new BlobDigest(digest))) {
            return in.readAllBytes();
        }
    }

    /**
     * The query {@code id} of {@code environment}.
     *
     * @throws ComputeException NOT_FOUND when there is none (another environment's is not shown)
     */
    public SqlJob find(String environment, String id) {
        return store.find(id)
                .filter(j -> j.environment().equals(environment))
                .orElseThrow(() -> ComputeException.notFound("no SQL query " + id + " in environment " + environment));
    }

    private long memory(Optional<Long> requested) {
        SqlOptions o = engine.options();
        if (requested.isEmpty()) {
            return o.defaultMemoryBytes();
        }
        long bytes = requested.get();
        if (bytes < SqlOptions.MIN_MEMORY_BYTES || bytes > o.maxMemoryBytes()) {
            throw new SqlFailure(
                    SqlFailure.Reason.INVALID,
                    "max_memory_bytes must be between " + SqlOptions.MIN_MEMORY_BYTES + " and " + o.maxMemoryBytes()
                            + " (this server's most per query), got " + bytes);
        }
        return bytes;
    }

    private static String summary(Request request, long memory, SqlEngine.Output out) {
        StringBuilder s = new StringBuilder();
        s.append("resource group: ").append(request.resourceGroup().orElse("default"));
        s.append("; memory limit: ").append(memory).append(" bytes");
        if (out != null) {
            s.append("; rows: ").append(out.rows());
            s.append("; files: ").append(out.files().size());
            s.append("; took: ").append(out.took().toMillis()).append(" ms");
        }
        return s.toString();
    }

    private static String newId() {
        return "sql_" + UUID.randomUUID().toString().replace("-", "");
    }

    /** Cancels the async queries running or queued; each is recorded as failed, saying the server shut down. */
    @Override
    public void close() {
        pool.shutdownNow();
        cancels.values().forEach(Runnable::run);
        try {
            pool.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            store.failRunning(SHUT_DOWN);
        } catch (RuntimeException e) {
            log.warn("Recording the SQL queries the shutdown canceled failed: {}", e.toString());
        }
        engine.close();
    }
}
