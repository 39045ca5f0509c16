package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.store.ImageBuildStore;
import ai.chalk.compute.server.store.ImageBuildStore.BuildRecord;
import ai.chalk.compute.server.threads.DaemonThreads;
import ai.chalk.compute.server.threads.EnvironmentShares;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Image builds keyed by the environment and the spec's content hash: a spec the environment built before whose image
 * is still present is answered {@code exists} without building; one being built is shared by every request of the
 * environment for it (one build, one id); a failed or vanished one is built again. Builds, their logs and their cache
 * hits are the environment's own, so no environment learns what another has built; builds of the same spec in two
 * environments run one after the other, since they make the same image. Builds run on a bounded pool and log every line to the store, where followers
 * ({@link BuildFollower}) and the logs RPC read them. After a restart, builds left unfinished are recorded failed.
 */
public final class BuildCache implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(BuildCache.class);
    /** The most of a build's own output its log keeps, in characters: BuildKit's 2 MiB a step, for a few steps. */
    static final long LOG_LIMIT_CHARS = 8L << 20;

    /** What a line costs toward {@link #LOG_LIMIT_CHARS} besides its text: its row in the store. */
    static final int LINE_COST_CHARS = 128;

    static final String CLIPPED =
            "[output clipped, log limit 8 MiB reached: the build goes on, its further output is" + " not kept]";

    /**
     * Builds waiting for a free builder beyond this many are refused (RESOURCE_EXHAUSTED); with the running ones, one
     * environment has at most half.
     */
    static final int MAX_QUEUED = 64;

    static final String RESTARTED = "the server restarted during the build; ask for the image again to rebuild it";
    static final String SHUT_DOWN = "the server shut down during the build; ask for the image again to rebuild it";
    /** The longest tag: with the environment's prefix on the engine, within the engine's 255 characters. */
    private static final int MAX_TAG_LENGTH = 200;

    private static final Pattern TAG = Pattern.compile(
            "[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?");

    private final Supplier<ImageBuilder> builders;
    private final ImageBuildStore store;
    private final ImageNames names;
    private final ThreadPoolExecutor pool;
    private final ExecutorService followers;
    private final Map<String, RunningBuild> byId = new ConcurrentHashMap<>();
    /** Running builds by {@link #key}. */
    private final Map<String, RunningBuild> byHash = new HashMap<>(); // guarded by this
    /** Held while a spec (by content hash) is being built, whatever the environment: one build of an image at a time. */
    private final Map<String, ReentrantLock> building = new ConcurrentHashMap<>();
    /**
     * Builds not finished (running or queued), per environment: counted here rather than by the pool's queue, whose
     * slot frees only once the builder thread of a finished build takes the next, so that a client who asks for
     * its next build as soon as one finished was refused.
     */
    private final EnvironmentShares unfinished;

    private volatile boolean closed;

    /**
     * @param builders       the runtime's image builder, asked for when a build is requested (a runtime that cannot
     *                       build says so then, not at server start)
     * @param parallelBuilds how many builds run at once; more wait in a queue
     */
    public BuildCache(Supplier<ImageBuilder> builders, ImageBuildStore store, int parallelBuilds) {
        this.builders = builders;
        this.store = store;
        this.names = new ImageNames(store, builders);
        this.pool = new ThreadPoolExecutor(
                parallelBuilds,
                parallelBuilds,
                0,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), // bounded by unfinished
                DaemonThreads.numbered("chalk-image-build"));
        this.unfinished = new EnvironmentShares("image builds", parallelBuilds + MAX_QUEUED);
        this.followers = Executors.newCachedThreadPool(DaemonThreads.numbered("chalk-image-follow"));
    }

    /** What the runtime calls the images an environment names: its own tags, and only the builds it made. */
    public ImageNames names() {
        return names;
    }

    /** Records builds that a previous server process left unfinished as failed; call once at start. */
    public void recover() {
        var ids = store.failUnfinished(RESTARTED);
        for (String id : ids) {
            appendLine(id, store.lastLogSeq(id) + 1, "ERROR", "Build failed: " + RESTARTED);
        }
        if (!ids.isEmpty()) {
            log.info("Recorded {} image build(s) interrupted by the restart as failed", ids.size());
        }
    }

    /**
     * The image of a spec for an environment: {@code exists} when the environment built it before and it is still
     * present, else the environment's running build of the same spec, else a new build. Returns at once; the build
     * goes on in the background.
     */
    public BuildAnswer getOrBuild(String environment, ImageSpec requested) {
        ImageBuilder builder = prepare(requested);
        ImageSpec spec = withRuntimeBase(environment, requested);
        byte[] canonical = ContentHash.canonicalBytes(spec);
        String hash = ContentHash.of(canonical);
        synchronized (this) {
            RunningBuild running = byHash.get(key(environment, hash));
            if (running != null) {
                return new BuildAnswer(running.id(), BuildAnswer.BUILDING, "", Optional.empty());
            }
            Optional<BuildRecord> last = store.latestFor(environment, hash);
            if (last.isPresent()
                    && last.get().status() == ImageBuildStore.Status.SUCCEEDED
                    && builder.exists(last.get().imageRef().orElseThrow())) {
                return new BuildAnswer(
                        last.get().id(),
                        BuildAnswer.EXISTS,
                        last.get().imageRef().get(),
                        Optional.empty());
            }
            return BuildAnswer.of(start(environment, builder, spec, canonical, hash, Optional.empty()));
        }
    }

    /**
     * The spec with its base image as the runtime calls it ({@link ImageNames}): the environment's own tag of that
     * name, so that the spec's content hash, and the image named after it on the engine, differ between two
     * environments whose same base name means two images.
     */
    private ImageSpec withRuntimeBase(String environment, ImageSpec spec) {
        String base = spec.getBaseImage().trim();
        String runtimeBase = names.forRuntime(environment, base, "image_spec.base_image");
        return runtimeBase.equals(base)
                ? spec
                : spec.toBuilder().setBaseImage(runtimeBase).build();
    }

    private static String key(String environment, String contentHash) {
        return environment + "/" + contentHash;
    }

    /**
     * Builds a spec anew for an environment, even when an image of it exists, unless the environment has a build of
     * it running: that one is returned (and tagged too when it succeeds).
     *
     * @param tag an extra name for the image, {@code repository[:tag]}
     */
    public BuildAnswer build(String environment, ImageSpec requested, Optional<String> tag) {
        tag.ifPresent(BuildCache::checkTag);
        ImageBuilder builder = prepare(requested);
        ImageSpec spec = withRuntimeBase(environment, requested);
        byte[] canonical = ContentHash.canonicalBytes(spec);
        String hash = ContentHash.of(canonical);
        synchronized (this) {
            RunningBuild running = byHash.get(key(environment, hash));
            if (running != null) {
                tag.ifPresent(t -> running.outcome()
                        .thenAccept(r ->
                                r.imageRef().ifPresent(ref -> tagLater(ref, ImageNames.engineTag(environment, t)))));
                return new BuildAnswer(running.id(), BuildAnswer.BUILDING, "", Optional.empty());
            }
            return BuildAnswer.of(start(environment, builder, spec, canonical, hash, tag));
        }
    }

    /**
     * The image of a spec for a sandbox: waits for its build (within the calling gRPC request's deadline and while
     * it is not cancelled) and returns it.
     *
     * @throws StatusRuntimeException FAILED_PRECONDITION when the build failed (naming the step, pointing at the
     *                                logs), DEADLINE_EXCEEDED or CANCELLED when the request ended first
     */
    public BuiltImage imageFor(String environment, ImageSpec spec) {
        BuildAnswer answer = getOrBuild(environment, spec);
        BuildRecord record =
                answer.status().equals(BuildAnswer.EXISTS) ? record(answer.buildId()) : await(answer.buildId());
        if (record.status() != ImageBuildStore.Status.SUCCEEDED) {
            throw ComputeException.refused("image build " + record.id() + " failed: "
                    + record.error().orElse("no reason was recorded") + "; its logs: GetCustomImageBuildLogs with"
                    + " build_id " + record.id());
        }
        return new BuiltImage(record.id(), record.imageRef().orElseThrow());
    }

    /**
     * An image built for a sandbox.
     *
     * @param buildId  the build that made it
     * @param imageRef the image, for the runtime
     */
    public record BuiltImage(String buildId, String imageRef) {}

    /**
     * Waits for a build (one the caller started, or found in its environment) to finish and returns its final record;
     * see {@link #imageFor} for how waiting ends early.
     */
    public BuildRecord await(String buildId) {
        RunningBuild running = byId.get(buildId);
        if (running == null) {
            return record(buildId);
        }
        Context context = Context.current();
        while (true) {
            try {
                return running.outcome().get(200, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                if (context.isCancelled()) {
                    Deadline deadline = context.getDeadline();
                    boolean expired = deadline != null && deadline.isExpired();
                    throw (expired ? Status.DEADLINE_EXCEEDED : Status.CANCELLED)
                            .withDescription("image build "
                                    + buildId + " is still running and the request "
                                    + (expired ? "ran out of time" : "was cancelled")
                                    + " waiting for it; the build goes on: follow it with"
                                    + " StreamCustomImageBuildUpdates, then ask again")
                            .asRuntimeException();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw Status.CANCELLED
                        .withDescription("interrupted waiting for image build " + buildId)
                        .asRuntimeException();
            } catch (ExecutionException e) {
                throw new IllegalStateException("image build " + buildId + " ended without a record", e.getCause());
            }
        }
    }

    /**
     * The record of one of the environment's builds, or NOT_FOUND: another environment's build answers as one that
     * does not exist, with the same message.
     */
    public BuildRecord find(String environment, String buildId) {
        if (buildId == null || buildId.isBlank()) {
            throw ComputeException.invalid("build_id is required");
        }
        return store.find(buildId)
                .filter(r -> r.environment().equals(environment))
                .orElseThrow(() -> ComputeException.notFound("image build " + buildId
                        + " does not exist on this server; ListCustomImageBuilds lists the builds"));
    }

    /** A build's record whatever its environment, for a build already known to be the caller's. */
    BuildRecord record(String buildId) {
        return store.find(buildId)
                .orElseThrow(() -> ComputeException.notFound("image build " + buildId
                        + " does not exist on this server; ListCustomImageBuilds lists the builds"));
    }

    /** The environment's newest build of a spec, by its content hash, or NOT_FOUND. */
    public BuildRecord findByHash(String environment, String contentHash) {
        if (contentHash == null || contentHash.isBlank()) {
            throw ComputeException.invalid("content_hash is required");
        }
        return store.latestFor(environment, contentHash.trim().toLowerCase(java.util.Locale.ROOT))
                .orElseThrow(() -> ComputeException.notFound(
                        "no image was built from a spec with content hash " + contentHash + " on this server"));
    }

    /** Runs a follower of a build until the build ends or its call does. */
    void follow(BuildFollower follower) {
        try {
            followers.execute(follower);
        } catch (RejectedExecutionException e) {
            throw ComputeException.unavailable("the server is shutting down");
        }
    }

    /** The build while it runs, for followers. */
    Optional<RunningBuild> running(String buildId) {
        return Optional.ofNullable(byId.get(buildId));
    }

    ImageBuildStore store() {
        return store;
    }

    private ImageBuilder prepare(ImageSpec spec) {
        if (closed) {
            throw ComputeException.unavailable("the server is shutting down");
        }
        ImageSpecCheck.validate(spec);
        ImageBuilder builder = builders.get();
        builder.check(spec);
        return builder;
    }

    private static void checkTag(String tag) {
        if (tag.length() > MAX_TAG_LENGTH || !TAG.matcher(tag).matches()) {
            throw ComputeException.invalid("tag \"" + tag + "\" is not an image name: use"
                    + " repository[:tag] in lower case, for example my-team/app:v1");
        }
    }

    /** Records and starts a build; the caller holds this cache's lock. */
    private BuildRecord start(
            String environment,
            ImageBuilder builder,
            ImageSpec spec,
            byte[] canonical,
            String hash,
            Optional<String> tag) {
        EnvironmentShares.Place place = unfinished.take(environment, this::refusal);
        String id = UUID.randomUUID().toString();
        BuildRecord record;
        try {
            record = store.insert(environment, id, hash, spec.getBaseImage().trim(), canonical, tag, Instant.now());
        } catch (RuntimeException | Error e) {
            place.close();
            throw e;
        }
        RunningBuild running = new RunningBuild(id, environment, hash, spec, tag);
        byId.put(id, running);
        byHash.put(key(environment, hash), running);
        try {
            running.task(pool.submit(() -> run(builder, running, place)));
        } catch (RejectedExecutionException e) {
            place.close();
            byId.remove(id);
            byHash.remove(key(environment, hash));
            String why = "the server is shutting down";
            store.finish(id, ImageBuildStore.Status.FAILED, Optional.empty(), Optional.of(why));
            throw Status.UNAVAILABLE.withDescription(why + "; try again later").asRuntimeException();
        }
        log.info("Image build {} started: base {}, content hash {}", id, record.baseImage(), hash);
        return record;
    }

    private String refusal(EnvironmentShares.Refusal refusal, EnvironmentShares unfinished, String environment) {
        String running = pool.getMaximumPoolSize() + " running, " + MAX_QUEUED + " queued";
        return refusal == EnvironmentShares.Refusal.ENVIRONMENT_SHARE
                ? "this environment has " + unfinished.held(environment) + " image builds not finished, the most one"
                        + " environment may (half of the " + unfinished.limit() + " the server takes: " + running
                        + "): wait for some to finish"
                : "the server has " + unfinished.held() + " image builds not finished, its limit (" + running + "):"
                        + " try again later";
    }

    /** Runs a build in its place, given back before the build is seen to be over: the next one finds it free. */
    private void run(ImageBuilder builder, RunningBuild build, EnvironmentShares.Place place) {
        line(
                build,
                "INFO",
                "Building image from " + build.spec().getBaseImage().trim() + " with "
                        + build.spec().getStepsCount() + " step(s), content hash " + build.contentHash());
        Optional<String> ref = Optional.empty();
        Optional<String> error = Optional.empty();
        try {
            String built = buildAlone(builder, build);
            if (build.tag().isPresent()) {
                String engineTag =
                        ImageNames.engineTag(build.environment(), build.tag().get());
                builder.tag(built, engineTag);
                line(
                        build,
                        "INFO",
                        "Tagged " + built + " as " + build.tag().get() + " in this environment (" + engineTag
                                + " on the engine)");
            }
            ref = Optional.of(built);
        } catch (ImageBuildException e) {
            error = Optional.of(e.getMessage());
        } catch (InterruptedException e) {
            error = Optional.of(SHUT_DOWN);
        } catch (RuntimeException e) {
            log.error("Image build {} failed unexpectedly", build.id(), e);
            error = Optional.of("the build failed unexpectedly (" + e.getClass().getSimpleName() + ": " + e.getMessage()
                    + "); the server log has the details");
        }
        error.ifPresent(e -> line(build, "ERROR", "Build failed: " + e));
        ref.ifPresent(r -> line(build, "INFO", "Image ready: " + r));
        ImageBuildStore.Status status =
                ref.isPresent() ? ImageBuildStore.Status.SUCCEEDED : ImageBuildStore.Status.FAILED;
        BuildRecord record;
        place.close();
        try {
            store.finish(build.id(), status, ref, error);
            record = store.find(build.id()).orElseThrow();
        } finally {
            synchronized (this) {
                byHash.remove(key(build.environment(), build.contentHash()), build);
                byId.remove(build.id(), build);
            }
        }
        log.info(
                "Image build {} {}{}",
                build.id(),
                BuildAnswer.status(status),
                error.map(e -> ": " + e).orElse(""));
        build.finish(record);
    }

    /** Builds the image, after any other environment's build of the same spec: both would write the same image. */
    private String buildAlone(ImageBuilder builder, RunningBuild build)
            throws ImageBuildException, InterruptedException {
        ReentrantLock lock = building.computeIfAbsent(build.contentHash(), h -> new ReentrantLock());
        lock.lockInterruptibly();
        try {
            return builder.build(build.spec(), build.contentHash(), text -> output(build, text));
        } finally {
            lock.unlock();
        }
    }

    /**
     * A line of the build's output, kept in its log up to {@link #LOG_LIMIT_CHARS} characters in all: a step that
     * prints in a loop (for as long as its 30 minutes) wrote every line into the server's store, which never shrinks.
     * Past the limit one line says so, as BuildKit does, and the rest is dropped; the build goes on.
     */
    private void output(RunningBuild build, String text) {
        // a line costs its row as well as its text: empty lines in a loop would otherwise be millions of rows
        switch (build.output(text.length() + LINE_COST_CHARS, LOG_LIMIT_CHARS)) {
            case KEEP -> line(build, "INFO", text);
            case CLIP -> line(build, "WARNING", CLIPPED);
            case DROP -> {
                // past the bound: dropped
            }
        }
    }

    private void line(RunningBuild build, String severity, String text) {
        synchronized (build) {
            appendLine(build.id(), build.nextLine(), severity, text);
            build.logged();
        }
    }

    private void appendLine(String buildId, long seq, String severity, String text) {
        try {
            store.appendLog(buildId, seq, Instant.now(), severity, text);
        } catch (RuntimeException e) {
            // a log line that cannot be written (the store is closing) must not fail the build itself
            log.debug("Build {}: cannot save a log line: {}", buildId, e.toString());
        }
    }

    private void tagLater(String ref, String tag) {
        try {
            builders.get().tag(ref, tag);
        } catch (ImageBuildException | RuntimeException e) {
            log.warn("Tagging image {} as {} failed: {}", ref, tag, e.getMessage());
        }
    }

    /** Cancels running builds (they are recorded failed: the server shut down) and stops the builders. */
    @Override
    public void close() {
        closed = true;
        followers.shutdownNow();
        pool.shutdownNow();
        try {
            if (!pool.awaitTermination(15, TimeUnit.SECONDS)) {
                log.warn("Image builds did not stop within 15 s of the shutdown");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (RunningBuild build : byId.values()) {
            // queued builds never ran: their task was dropped by shutdownNow
            try {
                store.finish(build.id(), ImageBuildStore.Status.FAILED, Optional.empty(), Optional.of(SHUT_DOWN));
                build.finish(store.find(build.id()).orElseThrow());
            } catch (RuntimeException e) {
                log.debug("Recording build {} as failed at shutdown: {}", build.id(), e.toString());
            }
        }
    }
}
