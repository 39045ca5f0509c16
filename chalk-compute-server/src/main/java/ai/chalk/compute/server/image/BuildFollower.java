package ai.chalk.compute.server.image;

import ai.chalk.compute.proto.sandbox.v1.StreamCustomImageBuildUpdatesResponse;
import ai.chalk.compute.server.error.ComputeException;
import ai.chalk.compute.server.grpc.StatusErrors;
import ai.chalk.compute.server.store.ImageBuildStore;
import ai.chalk.compute.server.store.ImageBuildStore.BuildRecord;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.List;
import java.util.Optional;

/**
 * One StreamCustomImageBuildUpdates call: replays the build's log from the store, then sends new lines as they are
 * logged (status {@code building}, the line in {@code message}), and ends with the final status, image and error.
 * It reads the store rather than holding lines in memory, and sends only while the client keeps up.
 */
final class BuildFollower implements Runnable {

    private static final int PAGE = 500;

    private final BuildCache cache;
    private final String buildId;
    private final ServerCallStreamObserver<StreamCustomImageBuildUpdatesResponse> out;
    private final Object ready = new Object();
    private volatile boolean cancelled;

    /** Must be created on the call's own thread: it registers the call's ready and cancel handlers. */
    BuildFollower(
            BuildCache cache, String buildId, ServerCallStreamObserver<StreamCustomImageBuildUpdatesResponse> out) {
        this.cache = cache;
        this.buildId = buildId;
        this.out = out;
        out.setOnReadyHandler(this::wake);
        out.setOnCancelHandler(() -> {
            cancelled = true;
            wake();
        });
    }

    @Override
    public void run() {
        try {
            long seen = 0;
            while (!cancelled) {
                Optional<RunningBuild> running = cache.running(buildId);
                seen = sendLines(seen);
                if (running.isEmpty() || running.get().outcome().isDone()) {
                    BuildRecord record =
                            running.isPresent() ? running.get().outcome().join() : cache.record(buildId);
                    seen = sendLines(seen); // the lines logged before the outcome was recorded
                    if (!cancelled) {
                        StreamCustomImageBuildUpdatesResponse.Builder last =
                                StreamCustomImageBuildUpdatesResponse.newBuilder()
                                        .setStatus(BuildAnswer.status(record.status()))
                                        .setImage(record.imageRef().orElse(""));
                        record.error().ifPresent(last::setError);
                        out.onNext(last.build());
                        out.onCompleted();
                    }
                    return;
                }
                running.get().awaitNews(seen, 1000);
            }
        } catch (InterruptedException e) {
            if (!cancelled) {
                out.onError(StatusErrors.toStatus(ComputeException.unavailable(
                                "the server is shutting down; the build " + buildId + " was stopped with it"))
                        .asRuntimeException());
            }
        } catch (RuntimeException e) {
            if (!cancelled) {
                out.onError(StatusErrors.toStatus(e).asRuntimeException());
            }
        }
    }

    /** Sends every stored line after {@code seen}, page by page as the client keeps up; returns the last one sent. */
    private long sendLines(long seen) throws InterruptedException {
        while (!cancelled) {
            List<ImageBuildStore.LogLine> page =
                    cache.store().logs(buildId, seen, Optional.empty(), Optional.empty(), PAGE);
            for (ImageBuildStore.LogLine line : page) {
                awaitReady();
                if (cancelled) {
                    return seen;
                }
                out.onNext(StreamCustomImageBuildUpdatesResponse.newBuilder()
                        .setStatus(BuildAnswer.BUILDING)
                        .setMessage(line.text())
                        .build());
                seen = line.seq();
            }
            if (page.size() < PAGE) {
                break;
            }
        }
        return seen;
    }

    private void awaitReady() throws InterruptedException {
        synchronized (ready) {
            while (!out.isReady() && !cancelled) {
                ready.wait(500);
            }
        }
    }

    private void wake() {
        synchronized (ready) {
            ready.notifyAll();
        }
    }
}
