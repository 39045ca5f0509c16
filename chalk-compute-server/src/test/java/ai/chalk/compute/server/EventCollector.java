package ai.chalk.compute.server;

import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** Collects a server stream's messages for a test, and lets it wait for one. */
public final class EventCollector<T> implements StreamObserver<T> {

    private final LinkedBlockingQueue<T> queue = new LinkedBlockingQueue<>();
    public final List<T> all = new ArrayList<>();
    public final CompletableFuture<Throwable> end = new CompletableFuture<>();

    @Override
    public void onNext(T value) {
        queue.add(value);
    }

    @Override
    public void onError(Throwable t) {
        end.complete(t);
    }

    @Override
    public void onCompleted() {
        end.complete(null);
    }

    /** Takes messages until one matches, returning it; fails after the timeout. */
    public T await(Predicate<T> match, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            T next = queue.poll(Math.max(left, 0), TimeUnit.NANOSECONDS);
            if (next == null) {
                throw new AssertionError("no matching message within " + timeout + "; got " + all
                        + (end.isDone() ? ", stream ended: " + end.join() : ""));
            }
            all.add(next);
            if (match.test(next)) {
                return next;
            }
        }
    }

    /** Takes every message until the stream ends. */
    public List<T> drain(Duration timeout) throws Exception {
        end.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        queue.drainTo(all);
        return all;
    }
}
