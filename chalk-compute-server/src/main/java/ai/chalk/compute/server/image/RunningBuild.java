package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.sandbox.v1.ImageSpec;
import ai.chalk.compute.server.store.ImageBuildStore.BuildRecord;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/**
 * A build in progress: how many lines it has logged (so followers know when to read more), and its outcome once it
 * has one. Followers wait on it for news instead of polling the store blindly.
 */
final class RunningBuild {

    private final String id;
    private final String environment;
    private final String contentHash;
    private final ImageSpec spec;
    private final Optional<String> tag;
    private final CompletableFuture<BuildRecord> outcome = new CompletableFuture<>();
    private long lines; // guarded by this
    private long outputChars; // guarded by this: of the build's own output kept in its log
    private Future<?> task; // guarded by this

    RunningBuild(String id, String environment, String contentHash, ImageSpec spec, Optional<String> tag) {
        this.id = id;
        this.environment = environment;
        this.contentHash = contentHash;
        this.spec = spec;
        this.tag = tag;
    }

    String id() {
        return id;
    }

    /** The environment that asked for the build. */
    String environment() {
        return environment;
    }

    String contentHash() {
        return contentHash;
    }

    ImageSpec spec() {
        return spec;
    }

    /** The tag the request that started the build asked for. */
    Optional<String> tag() {
        return tag;
    }

    /** Completes with the build's final record. */
    CompletableFuture<BuildRecord> outcome() {
        return outcome;
    }

    synchronized void task(Future<?> task) {
        this.task = task;
    }

    synchronized Future<?> task() {
        return task;
    }

    /** Numbers the next line of the log (from 1); the caller writes it, then calls {@link #logged()}. */
    synchronized long nextLine() {
        return lines + 1;
    }

    /** What becomes of a line of output under the log's bound ({@link #output}). */
    enum Output {
        KEEP,
        /** The first line past the bound: the log says it is clipped instead. */
        CLIP,
        DROP
    }

    /** Counts {@code chars} of output toward the log's bound, {@code limit}; says what to do with the line. */
    synchronized Output output(int chars, long limit) {
        if (outputChars > limit) {
            return Output.DROP;
        }
        outputChars += chars;
        return outputChars <= limit ? Output.KEEP : Output.CLIP;
    }

    /** Counts a line as written and wakes followers. */
    synchronized void logged() {
        lines++;
        notifyAll();
    }

    /** Records the outcome and wakes followers. */
    void finish(BuildRecord record) {
        outcome.complete(record);
        synchronized (this) {
            notifyAll();
        }
    }

    /**
     * Waits until the log has more than {@code seen} lines or the build has finished, at most {@code millis}.
     *
     * @throws InterruptedException when the waiting thread is interrupted
     */
    synchronized void awaitNews(long seen, long millis) throws InterruptedException {
        long until = System.nanoTime() + millis * 1_000_000;
        while (lines <= seen && !outcome.isDone()) {
            long left = (until - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                return;
            }
            wait(left);
        }
    }
}
