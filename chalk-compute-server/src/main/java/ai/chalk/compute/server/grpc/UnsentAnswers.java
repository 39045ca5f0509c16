package ai.chalk.compute.server.grpc;

import ai.chalk.compute.server.auth.BearerTokens;
import ai.chalk.compute.server.auth.Caller;
import ai.chalk.compute.server.exec.EnvironmentBytes;
import com.google.protobuf.MessageLite;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import org.jspecify.annotations.Nullable;

/**
 * The answers that clients have not read yet, per environment. gRPC sends a message as fast as the client reads it and
 * keeps the rest in the server meanwhile, however large: a client that asked for 33 MiB answers (function results,
 * queued calls' results, SQL results, proxied AI answers) and never read them made the server hold each one whole,
 * without bound; so did streams that ended with their last output unread (an exec's last MiB, a snippet's 16 MiB
 * artifact), since a finished stream no longer counts among the calls under way.
 *
 * <p>A call that answers once (unary, or after a client stream) holds its answer until the call is over, against a
 * server-wide budget of which one environment holds at most half: an answer that would pass it is not sent, and its
 * call ends RESOURCE_EXHAUSTED saying why. A stream's messages are held until the stream is ready for more (gRPC's own
 * test: less than the call's threshold waits to be written, 32 KiB unless the service sets another, 1 MiB for exec
 * output; it may be as soon as the message is sent), or is over, and are
 * counted for its environment alone, apart from its answers, whatever they hold (its producer waits for the client between messages,
 * {@link ReadyGate}, so one stream holds about one message), so that one tenant's streams cannot refuse another's
 * answers; an environment that holds its half is refused new streams at their start, until its clients read. So is one
 * holding its even part or more (the budget divided among the environments holding bytes) while the environments
 * hold the whole budget in answers and streams together (each up to its share), or any amount once they hold twice
 * the budget: without them, the streams of many environments together held their number times a half. An environment
 * holding nothing is not refused for what others hold. So the bytes held stay under three budgets, plus about one
 * message per stream open: streams are checked at their start, before they hold anything.
 *
 * <p>Installed after the interceptor that says who calls ({@link Caller}), on the TCP port and on the replicas'
 * socket: deployed code is a tenant's too. Health checks and token exchanges, which anyone may call, answer a few
 * bytes and are not counted.
 */
public final class UnsentAnswers implements ServerInterceptor {

    private static final ServerCall.Listener<Object> NOTHING = new ServerCall.Listener<>() {};

    /** The current call's held bytes, for a service that reserves room for its answer before making it. */
    private static final Context.Key<Held> HELD = Context.key("chalk-compute-unsent-answer");

    private final EnvironmentBytes budget;

    /** @param budget the bytes of answers sent and not yet read, of which one environment holds at most half */
    public UnsentAnswers(EnvironmentBytes budget) {
        this.budget = budget;
    }

    /**
     * Reserves room for what the current call is about to send, for a service that gives something up or holds memory
     * for it: a unary call's answer (a queued call's result, forgotten once returned), which it learns has no room before
     * it gives it up, not after; or what a stream holds for as long as it lasts (the links it sends as the client
     * reads). Nothing where answers are not counted (in-process calls, the embedding application's).
     *
     * @throws io.grpc.StatusRuntimeException RESOURCE_EXHAUSTED, saying why, when there is no room
     */
    public static void reserveAnswer(long bytes) {
        Held held = HELD.get();
        EnvironmentBytes.Refusal refusal = held == null ? null : held.ahead(bytes);
        if (refusal != null) {
            throw Status.RESOURCE_EXHAUSTED
                    .withDescription("the answer (" + bytes + " bytes) is not made: " + unread(held.account, refusal))
                    .asRuntimeException();
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Caller caller = Caller.KEY.get();
        if (caller == null || BearerTokens.open(call.getMethodDescriptor().getFullMethodName())) {
            return next.startCall(call, headers); // health and token exchanges: anyone's, a few bytes each
        }
        EnvironmentBytes.Account account = budget.of(caller.environment());
        boolean unary = call.getMethodDescriptor().getType().serverSendsOneMessage();
        EnvironmentBytes.Refusal full = unary ? null : account.full();
        if (full != null) {
            call.close(
                    Status.RESOURCE_EXHAUSTED.withDescription("no stream is opened: " + unread(account, full)),
                    new Metadata());
            return (ServerCall.Listener<Q>) NOTHING;
        }
        Held held = new Held(account);
        CountedCall<Q, R> counted = new CountedCall<>(call, held, unary);
        ServerCall.Listener<Q> listener =
                Contexts.interceptCall(Context.current().withValue(HELD, held), counted, headers, next);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onReady() {
                counted.written();
                super.onReady();
            }

            @Override
            public void onComplete() {
                held.over();
                super.onComplete();
            }

            @Override
            public void onCancel() {
                held.over();
                super.onCancel();
            }
        };
    }

    private static String unread(EnvironmentBytes.Account account, EnvironmentBytes.Refusal refusal) {
        return (refusal == EnvironmentBytes.Refusal.SERVER_FULL
                        ? "the answers clients have not read yet hold too many bytes: "
                        : "the answers this environment's clients have not read yet hold too many bytes: ")
                + account.explain(refusal)
                + "; read the answers of the calls you make (a call whose answer is not read holds it in the server"
                + " until the call is cancelled)";
    }

    /** A call whose messages are held against the budget until they are written, or refused past it. */
    private static final class CountedCall<Q, R> extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
        private final Held held;
        private final boolean unary;
        private volatile boolean refused;

        CountedCall(ServerCall<Q, R> call, Held held, boolean unary) {
            super(call);
            this.held = held;
            this.unary = unary;
        }

        @Override
        public void sendMessage(R message) {
            if (refused) {
                return;
            }
            long bytes = message instanceof MessageLite m ? m.getSerializedSize() : 0;
            if (!unary) {
                synchronized (held) { // so that a ready call seen meanwhile does not give back this message
                    held.keep(bytes);
                    super.sendMessage(message);
                    written();
                }
                return;
            }
            EnvironmentBytes.Refusal refusal = held.answer(bytes);
            if (refusal != null) {
                refused = true;
                super.close(
                        Status.RESOURCE_EXHAUSTED.withDescription(
                                "the answer (" + bytes + " bytes) is not sent: " + unread(held.account, refusal)),
                        new Metadata());
                return;
            }
            super.sendMessage(message);
        }

        /**
         * Gives back a stream's messages once less than gRPC's threshold waits to be written (the transport counts a
         * stream's message as it is sent, so right after a send this sees it), so that an idle stream does not hold
         * its last message. A single answer is held until its call is over: gRPC writes it out only at the close.
         */
        void written() {
            if (!unary) {
                synchronized (held) {
                    if (isReady()) {
                        held.sent();
                    }
                }
            }
        }

        @Override
        public void close(Status status, Metadata trailers) {
            if (!refused) { // else closed already, saying why the answer did not come
                super.close(status, trailers);
            }
        }
    }

    /**
     * The bytes one call has sent and that may not be written yet, and what it reserved ahead; given back once the call
     * is over. A unary answer's are the budget's; a stream's are counted against its environment's share alone.
     */
    private static final class Held {
        private final EnvironmentBytes.Account account;
        private long answered; // of the budget, with ahead (guarded by this)
        private long ahead; // of answered, reserved before sending: a unary answer to come, or a stream's until over
        private long aheadUnsent; // of a stream's ahead, what its messages have not yet covered (guarded by this)
        private long streamed; // counted for the environment alone (guarded by this)
        private boolean over; // guarded by this

        Held(EnvironmentBytes.Account account) {
            this.account = account;
        }

        /** Reserves {@code n} bytes ahead; null when reserved (or the call is over), else why not. */
        synchronized EnvironmentBytes.@Nullable Refusal ahead(long n) {
            if (over) {
                return null;
            }
            EnvironmentBytes.Refusal refusal = account.tryReserve(n);
            if (refusal == null) {
                answered += n;
                ahead += n;
                aheadUnsent += n;
            }
            return refusal;
        }

        /** Holds a unary call's answer of {@code n} bytes, with what was reserved for it; null when held, else why not. */
        synchronized EnvironmentBytes.@Nullable Refusal answer(long n) {
            if (over) {
                return null;
            }
            long more = n - ahead;
            ahead = 0;
            if (more <= 0) {
                account.release(-more);
                answered += more;
                return null;
            }
            EnvironmentBytes.Refusal refusal = account.tryReserve(more);
            if (refusal == null) {
                answered += more;
            }
            return refusal;
        }

        /**
         * Counts {@code n} more bytes of a stream's message against the environment's share, whether or not they fit,
         * past what the stream reserved ahead to hold until it is over.
         */
        synchronized void keep(long n) {
            long covered = Math.min(n, aheadUnsent);
            aheadUnsent -= covered;
            if (!over && n > covered) {
                account.count(n - covered);
                streamed += n - covered;
            }
        }

        /** A stream's messages have been written, but for less than its threshold: only what it reserved stays held. */
        synchronized void sent() {
            account.uncount(streamed);
            streamed = 0;
        }

        synchronized void over() {
            account.uncount(streamed);
            account.release(answered);
            streamed = 0;
            answered = 0;
            ahead = 0;
            aheadUnsent = 0;
            over = true;
        }
    }
}
