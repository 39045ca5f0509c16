package ai.chalk.compute.server.grpc;

import io.grpc.stub.ServerCallStreamObserver;

/**
 * Lets a producer thread wait until a server stream can take another message, so output is
 * sent only as fast as the client reads and server memory stays bounded. Register it as the
 * stream's on-ready handler before the first message.
 */
public final class ReadyGate implements Runnable {

    private final ServerCallStreamObserver<?> call;
    private final Object lock = new Object();
    private volatile boolean closed;

    public ReadyGate(ServerCallStreamObserver<?> call) {
        this.call = call;
    }

    @Override
    public void run() {
        synchronized (lock) {
            lock.notifyAll();
        }
    }

    /** Releases waiters for good (call cancelled or finished). */
    public void close() {
        closed = true;
        run();
    }

    /** Blocks until the call is ready; returns false once it was closed or cancelled. */
    public boolean awaitReady() {
        synchronized (lock) {
            while (!closed && !call.isCancelled() && !call.isReady()) {
                try {
                    // isReady can flip without a callback when the call is cancelled: re-check now and then
                    lock.wait(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return !closed && !call.isCancelled();
        }
    }
}
