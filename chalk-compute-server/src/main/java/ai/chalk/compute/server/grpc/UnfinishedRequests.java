package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.threads.DaemonThreads;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Ends a unary or server-streaming call whose one request message has come but whose client has not said it is done
 * (half-closed) within {@link #WAIT}. gRPC runs such a call's method only at the half-close, and holds the parsed
 * request until then: a message of 33 MiB made of empty repeated fields is about 20 times that as objects, so a client
 * that sent such messages and never half-closed held gigabytes of the heap per few calls, for as long as it kept the
 * connection. Every client sends the half-close with its message, so a call that waits this long for it is not one.
 * The client gets INVALID_ARGUMENT saying so.
 */
public final class UnfinishedRequests implements ServerInterceptor {

    /** How long after its message a one-message call may wait for the client's half-close. */
    public static final Duration WAIT = Duration.ofSeconds(5);

    // a cancelled wait (every call that half-closes in time) must not keep its call, and its request, reachable
    // until the wait would have ended
    private static final ScheduledThreadPoolExecutor TIMER = DaemonThreads.timer("chalk-compute-unfinished-requests");

    private final Duration wait;

    /** Ends calls that wait {@link #WAIT}. */
    public UnfinishedRequests() {
        this(WAIT);
    }

    UnfinishedRequests(Duration wait) {
        this.wait = wait;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        if (!call.getMethodDescriptor().getType().clientSendsOneMessage()) {
            return next.startCall(call, headers);
        }
        Waiting<Q, R> waiting = new Waiting<>(call);
        // a call the method (or a guard: a malformed request, a second message) closes itself needs no end of ours
        waiting.handler = next.startCall(
                new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void close(Status status, Metadata trailers) {
                        waiting.closedByServer();
                        super.close(status, trailers);
                    }
                },
                headers);
        return waiting;
    }

    /**
     * A call between its message and its half-close. The message, the half-close's flag and the end of the wait hold
     * its lock: the call is only ever closed by one of them at a time (the handler closes it from {@code onMessage}
     * when a second message comes), and once the wait has ended the call, nothing more reaches its handler but the end
     * of the stream. The method itself runs outside the lock, so a long one never holds up the timer.
     */
    private final class Waiting<Q, R> extends ForwardingServerCallListener<Q> {

        private final ServerCall<Q, R> call;
        /** The listener of the call's method, set once it has started. */
        ServerCall.Listener<Q> handler;

        private @Nullable ScheduledFuture<?> expiry;
        private boolean halfClosed;
        private boolean ended;

        Waiting(ServerCall<Q, R> call) {
            this.call = call;
        }

        @Override
        protected ServerCall.Listener<Q> delegate() {
            return handler;
        }

        synchronized void closedByServer() {
            ended = true;
            stopWaiting();
        }

        @Override
        public synchronized void onMessage(Q message) {
            if (ended) {
                return;
            }
            super.onMessage(message);
            if (expiry == null && !halfClosed && !ended) {
                expiry = TIMER.schedule(this::expire, wait.toMillis(), TimeUnit.MILLISECONDS);
            }
        }

        @Override
        public void onHalfClose() {
            synchronized (this) {
                if (ended) {
                    return;
                }
                halfClosed = true;
                stopWaiting();
            }
            super.onHalfClose();
        }

        @Override
        public void onCancel() {
            synchronized (this) {
                stopWaiting();
            }
            super.onCancel();
        }

        @Override
        public void onComplete() {
            synchronized (this) {
                stopWaiting();
            }
            super.onComplete();
        }

        private void stopWaiting() {
            if (expiry != null) {
                expiry.cancel(false);
                expiry = null;
            }
        }

        private synchronized void expire() {
            if (halfClosed || ended) {
                return;
            }
            ended = true;
            expiry = null;
            call.close(
                    Status.INVALID_ARGUMENT.withDescription("the request of "
                            + call.getMethodDescriptor().getFullMethodName() + " came, but the client did not end"
                            + " its side of the call (half-close) within " + wait.toSeconds() + " s; a unary or"
                            + " server-streaming call sends its one message and then half-closes"),
                    new Metadata());
        }
    }
}
