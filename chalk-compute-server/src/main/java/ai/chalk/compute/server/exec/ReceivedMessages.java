package ai.chalk.compute.server.exec;

import ai.chalk.compute.server.auth.BearerTokens;
import io.grpc.ClientStreamTracer;
import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Bounds, server-wide, the bytes of request messages that the network transport is still receiving. gRPC assembles a
 * message whole before any service sees it, and a message may be 33 MiB: without a bound, a client could open many
 * calls, send every message but its last byte, and hold that much of the heap per call. A message whose next bytes do
 * not fit the budget fails its call and lets its bytes go; the other calls go on. The client gets RESOURCE_EXHAUSTED
 * with the reason, or, on a stream whose response has begun, CANCELLED: HTTP/2 then has only a reset to end it (the
 * server's log has the reason).
 *
 * <p>It counts what the transport reports as received for the message under way (its wire size so far), from the
 * message's first byte to its last, so it covers the TCP port and the replicas' socket; in-process calls pass message
 * objects and hold no such bytes. A message's first MiB is not counted: HTTP/2's flow-control window already lets
 * every stream hold that much, and so a client that fills the budget holds back only other large messages (uploads),
 * never the small requests every other call sends.
 *
 * <p>No one caller may hold more than half the budget (or one largest message, when the budget holds less than two), so
 * that a caller who fills its share holds back only itself: callers are told apart by the environment their calls'
 * token names (a client's token, a replica's own token on the replicas' socket), or by the credential itself when it
 * names none, and calls without one are one caller. Told apart by the token's text, one tenant asking for a token per
 * call (or writing {@code bearer} for {@code Bearer}) got a share per call and filled the whole budget. The credential
 * is checked when the call starts, as its headers arrive, so a call with a made-up one (naming another environment,
 * say) is ended before it can hold much; with authentication off (a server for trusted callers) anyone can name
 * themselves, and only the server-wide budget holds.
 */
public final class ReceivedMessages extends ServerStreamTracer.Factory {

    /** The bytes of a message that are not counted: gRPC's flow-control window per stream. */
    static final long UNCOUNTED_BYTES = 1 << 20;

    /** The counted bytes of the largest message a client may send (ComputeServer.MAX_MESSAGE_BYTES). */
    private static final long LARGEST_COUNTED = (33L << 20) - UNCOUNTED_BYTES;

    /**
     * The largest message of a method open to callers without a token (the token exchange, health checks): a client id
     * and secret, or a service's name, are a few hundred bytes; anyone who reaches the port could send 33 MiB to each
     * of thousands of such calls (the first MiB of each uncounted, {@link #UNCOUNTED_BYTES}).
     */
    static final long OPEN_METHOD_BYTES = 8 << 10;

    /** Credentials whose caller is remembered at once. */
    private static final int CALLERS_REMEMBERED = 4_096;

    private final ByteBudget budget;
    private final long share;
    /** Counted bytes held per caller ({@link #callerOf}, "" for none); a caller holding nothing has no entry. */
    private final Map<String, Long> heldByCaller = new HashMap<>();
    /** The caller each recent credential names: a token is read once, not on each of its calls. */
    private final Map<String, String> callers = new ConcurrentHashMap<>();

    /** @param budget the budget the messages being received share */
    public ReceivedMessages(ByteBudget budget) {
        this.budget = budget;
        this.share = Math.max(budget.limit() / 2, Math.min(budget.limit(), LARGEST_COUNTED));
    }

    @Override
    public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
        // the header authentication reads, here before any interceptor has checked it: only to tell callers apart
        String credential = headers.get(BearerTokens.AUTHORIZATION);
        // the methods open to anyone are never authenticated: a credential sent with them proves nothing, and one
        // naming another environment would have charged that environment's share
        boolean open = BearerTokens.open(fullMethodName);
        return new Call(fullMethodName, credential == null || open ? "" : callerOf(credential), open);
    }

    /** The caller a credential stands for: the environment its token names, else the credential. */
    private String callerOf(String credential) {
        String known = callers.get(credential);
        if (known != null) {
            return known;
        }
        String caller = BearerTokens.claimedEnvironment(credential)
                .map(environment -> "environment " + environment)
                .orElse(credential);
        if (callers.size() >= CALLERS_REMEMBERED) {
            callers.clear(); // made-up credentials in a loop cost a read each, not the heap
        }
        callers.put(credential, caller);
        return caller;
    }

    /** The most counted bytes one caller may hold. */
    long share() {
        return share;
    }

    /** Reserves for {@code caller} if it fits both its share and the budget. */
    private synchronized boolean reserve(String caller, long bytes) {
        long held = heldByCaller.getOrDefault(caller, 0L);
        if (held + bytes > share || !budget.tryReserve(bytes)) {
            return false;
        }
        heldByCaller.put(caller, held + bytes);
        return true;
    }

    private synchronized void release(String caller, long bytes) {
        if (bytes == 0) {
            return;
        }
        budget.release(bytes);
        long left = heldByCaller.get(caller) - bytes;
        if (left == 0) {
            heldByCaller.remove(caller);
        } else {
            heldByCaller.put(caller, left);
        }
    }

    /**
     * Counts, against the share of the replicas of {@code environment}, the answers the server is receiving from them:
     * a replica answers a call with up to 33 MiB, and a hostile one could leave a message all but its last byte sent on
     * every call it holds (a thousand calls in flight per environment) until the call's deadline, the tenant's to set.
     */
    public ClientStreamTracer.Factory answersFromReplicasOf(String environment) {
        String caller = "environment " + environment;
        return new ClientStreamTracer.Factory() {
            @Override
            public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
                UnderWay message = new UnderWay("an answer of a function's replica", caller, false);
                return new ClientStreamTracer() {
                    @Override
                    public void inboundWireSize(long bytes) {
                        message.received(bytes);
                    }

                    @Override
                    public void inboundMessageRead(int seqNo, long optionalWireSize, long optionalUncompressedSize) {
                        message.letGo();
                    }

                    @Override
                    public void streamClosed(Status status) {
                        message.letGo();
                    }
                };
            }
        };
    }

    /** One call's tracer on the server's side. */
    private final class Call extends ServerStreamTracer {

        private final UnderWay message;

        Call(String method, String caller, boolean open) {
            this.message = new UnderWay(method, caller, open);
        }

        @Override
        public void inboundWireSize(long bytes) {
            message.received(bytes);
        }

        @Override
        public void inboundMessageRead(int seqNo, long optionalWireSize, long optionalUncompressedSize) {
            message.letGo();
        }

        @Override
        public void streamClosed(Status status) {
            message.letGo();
        }
    }

    /**
     * One call's message under way, released when the message is whole or the stream closes. The transport may report
     * a closed stream from another thread than the one reading it, hence the (uncontended) lock.
     */
    private final class UnderWay {

        private final String method;
        private final String caller;
        private final boolean open;
        /** Bytes of the message under way so far. */
        private long received;
        /** Bytes of it reserved in the budget (those past {@link #UNCOUNTED_BYTES}). */
        private long held;

        UnderWay(String method, String caller, boolean open) {
            this.method = method;
            this.caller = caller;
            this.open = open;
        }

        synchronized void received(long bytes) {
            received += bytes;
            if (open && received > OPEN_METHOD_BYTES) {
                long receiving = received;
                letGo();
                throw Status.RESOURCE_EXHAUSTED
                        .withDescription("a request to " + method + " may be at most " + OPEN_METHOD_BYTES
                                + " bytes; this one is " + receiving + " bytes so far")
                        .asRuntimeException();
            }
            long counted = Math.max(0, received - UNCOUNTED_BYTES) - held;
            if (counted == 0 || reserve(caller, counted)) {
                held += counted;
                return;
            }
            long receiving = received;
            letGo();
            // thrown into the transport's reading of this stream: gRPC fails the stream with this status (the
            // description names the method and sizes, never the credential that told the caller apart)
            throw Status.RESOURCE_EXHAUSTED
                    .withDescription("the server is receiving too many large messages at once (" + method + ": "
                            + receiving + " bytes so far; " + budget.limit() + " bytes of " + budget.what()
                            + " server-wide, at most " + share + " of them from one caller): send it again later, or"
                            + " in smaller pieces")
                    .asRuntimeException();
        }

        synchronized void letGo() {
            release(caller, held);
            held = 0;
            received = 0;
        }
    }
}
