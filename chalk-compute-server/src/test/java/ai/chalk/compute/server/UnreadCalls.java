package ai.chalk.compute.server;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.awaitility.Awaitility;

/** Calls whose client sends its request and half-closes, but asks for no answer: a client that does not read. */
public final class UnreadCalls {

    private UnreadCalls() {}

    /**
     * Starts a call of {@code method} on {@code channel}, sends {@code request}, half-closes and asks for nothing.
     * {@code closed} gets the status the call ends with, which gRPC gives once the answers before it are read (at once
     * when there are none). Ask for the answers with {@link ClientCall#request}.
     */
    public static <Q, R> ClientCall<Q, R> start(
            Channel channel,
            MethodDescriptor<Q, R> method,
            CallOptions options,
            Q request,
            CompletableFuture<Status> closed) {
        ClientCall<Q, R> call = withoutHalfClose(channel, method, options, request, closed);
        call.halfClose();
        return call;
    }

    /**
     * As {@link #start}, but the client never half-closes: a unary call whose method gRPC runs only at the half-close
     * (the server ends it, {@code UnfinishedRequests}).
     */
    public static <Q, R> ClientCall<Q, R> withoutHalfClose(
            Channel channel,
            MethodDescriptor<Q, R> method,
            CallOptions options,
            Q request,
            CompletableFuture<Status> closed) {
        ClientCall<Q, R> call = channel.newCall(method, options);
        call.start(
                new ClientCall.Listener<>() {
                    @Override
                    public void onClose(Status status, Metadata trailers) {
                        closed.complete(status);
                    }
                },
                new Metadata());
        call.sendMessage(request);
        return call;
    }

    /**
     * Starts calls with {@code start}, each once the one before holds more bytes in the server ({@code held} grew) or
     * has ended, until one ends or {@code most} were started; adds each to {@code started}. Returns the status of the
     * one that ended (a refusal, for calls nobody reads), or null when none did.
     */
    public static Status startUntilOneEnds(
            int most,
            LongSupplier held,
            Function<CompletableFuture<Status>, ClientCall<?, ?>> start,
            List<ClientCall<?, ?>> started) {
        for (int i = 0; i < most; i++) {
            long before = held.getAsLong();
            CompletableFuture<Status> closed = new CompletableFuture<>();
            started.add(start.apply(closed));
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> closed.isDone() || held.getAsLong() > before);
            if (closed.isDone()) {
                return closed.join();
            }
        }
        return null;
    }
}
