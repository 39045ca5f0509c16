package ai.chalk.compute.server.exec;

import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;

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
 */
public final class ReceivedMessages extends ServerStreamTracer.Factory {

    /** The bytes of a message that are not counted: gRPC's flow-control window per stream. */
    static final long UNCOUNTED_BYTES = 1 << 20;

    private final ByteBudget budget;

    /** @param budget the budget the messages being received share */
    public ReceivedMessages(ByteBudget budget) {
        this.budget = budget;
    }

    @Override
    public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
        return new Call(fullMethodName);
    }

    /**
     * One call's message under way, released when the message is whole or the stream closes. The transport may report
     * a closed stream from another thread than the one reading it, hence the (uncontended) lock.
     */
    private final class Call extends ServerStreamTracer {

        private final String method;
        /** Bytes of the message under way so far. */
        private long received;
        /** Bytes of it reserved in the budget (those past {@link #UNCOUNTED_BYTES}). */
        private long held;

        Call(String method) {
            this.method = method;
        }

        @Override
        public synchronized void inboundWireSize(long bytes) {
            received += bytes;
            long counted = Math.max(0, received - UNCOUNTED_BYTES) - held;
            if (budget.tryReserve(counted)) {
                held += counted;
                return;
            }
            long receiving = received;
            letGo();
            // thrown into the transport's reading of this stream: gRPC fails the stream with this status
            throw Status.RESOURCE_EXHAUSTED
                    .withDescription("the server is receiving too many large messages at once (" + method + ": "
                            + receiving + " bytes so far; " + budget.limit() + " bytes of " + budget.what()
                            + " server-wide): send it again later, or in smaller pieces")
                    .asRuntimeException();
        }

        @Override
        public void inboundMessageRead(int seqNo, long optionalWireSize, long optionalUncompressedSize) {
            letGo();
        }

        @Override
        public void streamClosed(Status status) {
            letGo();
        }

        private synchronized void letGo() {
            budget.release(held);
            held = 0;
            received = 0;
        }
    }
}
